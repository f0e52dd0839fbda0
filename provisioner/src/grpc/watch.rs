//! `WatchProvision` on the wire: every stream of a provision sends the same bytes, encoded
//! once per change ([`Published::encoded`]), from a stream that polls the provision's watch
//! channel directly (no task, no channel of its own, a 1 KiB encode buffer). The stream
//! ends after a terminal state, or when the client goes away (the transport drops it).
//! [`ProvisionerServer`] serves this route and hands every other method of the service to
//! the generated server.
use std::convert::Infallible;
use std::sync::Arc;

use futures::stream::BoxStream;
use levelrail_proto::provisioner::v1 as pb;
use levelrail_proto::provisioner::v1::provisioner_service_server::{
    ProvisionerService, ProvisionerServiceServer,
};
use prost::Message as _;
use prost::bytes::{BufMut as _, Bytes};
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{Body, BoxFuture, Context, Poll, Service, StdError, http};
use tonic::server::{NamedService, ServerStreamingService};
use tonic::{Request, Response, Status};

use super::provision_convert as convert;
use super::provision_status::status;
use crate::app::Provisioner;
use crate::app::workflow::{Published, Subscription};

/// The path of the method served here.
const WATCH_PATH: &str = "/levelrail.provisioner.v1.ProvisionerService/WatchProvision";
/// The encode and decode buffers of a watch stream (an event is a few hundred bytes; a
/// larger one grows the buffer in these steps).
const WATCH_BUFFER: usize = 1024;
/// The largest `WatchProvisionRequest` accepted (an id).
const MAX_WATCH_REQUEST: usize = 4096;

/// `ProvisionerService` (the handlers `T`), with `WatchProvision` served from shared
/// encoded events.
#[derive(Debug)]
pub struct ProvisionerServer<T> {
    inner: ProvisionerServiceServer<T>,
    provisioner: Arc<Provisioner>,
}

impl<T> Clone for ProvisionerServer<T> {
    fn clone(&self) -> Self {
        ProvisionerServer {
            inner: self.inner.clone(),
            provisioner: Arc::clone(&self.provisioner),
        }
    }
}

impl<T: ProvisionerService> ProvisionerServer<T> {
    pub(super) fn new(handlers: T, provisioner: Arc<Provisioner>) -> Self {
        ProvisionerServer {
            inner: ProvisionerServiceServer::new(handlers),
            provisioner,
        }
    }

    /// Limits the decoded size of the other methods' requests.
    #[must_use]
    pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
        self.inner = self.inner.max_decoding_message_size(limit);
        self
    }
}

impl<T> NamedService for ProvisionerServer<T> {
    const NAME: &'static str = <ProvisionerServiceServer<T> as NamedService>::NAME;
}

impl<T, B> Service<http::Request<B>> for ProvisionerServer<T>
where
    T: ProvisionerService,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        <ProvisionerServiceServer<T> as Service<http::Request<B>>>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != WATCH_PATH {
            return self.inner.call(req);
        }
        let watch = Watch(Arc::clone(&self.provisioner));
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(SharedEventCodec)
                .apply_max_message_size_config(Some(MAX_WATCH_REQUEST), None);
            Ok(grpc.server_streaming(watch, req).await)
        })
    }
}

/// The states of a subscription, each made into an item by `item`, ending after a
/// terminal one.
pub(super) fn subscription_stream<T: Send + 'static>(
    subscription: Subscription,
    item: fn(&Published) -> T,
) -> BoxStream<'static, Result<T, Status>> {
    Box::pin(futures::stream::unfold(
        subscription,
        move |mut sub| async move {
            let published = sub.next_shared().await?;
            Some((Ok(item(&published)), sub))
        },
    ))
}

/// A published state as a `ProvisionEvent` message.
pub(super) fn event(published: &Published) -> pb::ProvisionEvent {
    pb::ProvisionEvent {
        provision: Some(convert::provision(published.provision.clone())),
    }
}

/// The wire form of a published state: its `ProvisionEvent`, encoded once.
fn encoded_event(published: &Published) -> Bytes {
    published.encoded(|_| event(published).encode_to_vec().into())
}

struct Watch(Arc<Provisioner>);

impl ServerStreamingService<pb::WatchProvisionRequest> for Watch {
    type Response = Bytes;
    type ResponseStream = BoxStream<'static, Result<Bytes, Status>>;
    type Future = BoxFuture<Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: Request<pb::WatchProvisionRequest>) -> Self::Future {
        let provisioner = Arc::clone(&self.0);
        Box::pin(async move {
            let id = convert::provision_id(&request.into_inner().id)?;
            let subscription = provisioner.watch_provision(&id).await.map_err(status)?;
            Ok(Response::new(subscription_stream(
                subscription,
                encoded_event,
            )))
        })
    }
}

/// Sends already-encoded messages as they are; decodes the request with prost.
#[derive(Debug, Clone, Copy, Default)]
struct SharedEventCodec;

impl Codec for SharedEventCodec {
    type Encode = Bytes;
    type Decode = pb::WatchProvisionRequest;
    type Encoder = SharedEventCodec;
    type Decoder = SharedEventCodec;

    fn encoder(&mut self) -> Self::Encoder {
        SharedEventCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        SharedEventCodec
    }
}

impl Encoder for SharedEventCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(WATCH_BUFFER, 32 * 1024)
    }
}

impl Decoder for SharedEventCodec {
    type Item = pb::WatchProvisionRequest;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        pb::WatchProvisionRequest::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(format!("could not decode the request: {e}")))
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(WATCH_BUFFER, 32 * 1024)
    }
}
