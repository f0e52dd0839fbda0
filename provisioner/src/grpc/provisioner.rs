//! `ProvisionerService`: regions, sizes and provisions. Handlers destructure the request,
//! convert, make one `Provisioner` call and convert back. On the wire `WatchProvision` is
//! served by `watch.rs` (events encoded once for every stream); the method here streams
//! the same states as messages (in-process callers).
use std::sync::Arc;

use levelrail_proto::provisioner::v1 as pb;
use levelrail_proto::provisioner::v1::provisioner_service_server::ProvisionerService;
use tonic::{Request, Response, Status};

use super::provision_convert as convert;
use super::provision_status::status;
use super::watch::{ProvisionerServer, event, subscription_stream};
use crate::app::Provisioner;

/// The `ProvisionerService` implementation over a [`Provisioner`].
#[derive(Debug, Clone)]
pub struct ProvisionerGrpc {
    provisioner: Arc<Provisioner>,
}

impl ProvisionerGrpc {
    /// Handlers over `provisioner`.
    pub fn new(provisioner: Arc<Provisioner>) -> Self {
        ProvisionerGrpc { provisioner }
    }

    /// The tonic service, ready to mount on the public (bearer-authenticated) listener.
    pub fn into_server(self) -> ProvisionerServer<Self> {
        let provisioner = Arc::clone(&self.provisioner);
        ProvisionerServer::new(self, provisioner)
    }
}

#[tonic::async_trait]
impl ProvisionerService for ProvisionerGrpc {
    async fn list_regions(
        &self,
        request: Request<pb::ListRegionsRequest>,
    ) -> Result<Response<pb::ListRegionsResponse>, Status> {
        let provider =
            convert::provider(request.into_inner().provider).map_err(|e| status(e.into()))?;
        let regions = self
            .provisioner
            .list_regions(provider)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ListRegionsResponse {
            regions: regions.into_iter().map(convert::region).collect(),
        }))
    }

    async fn list_sizes(
        &self,
        request: Request<pb::ListSizesRequest>,
    ) -> Result<Response<pb::ListSizesResponse>, Status> {
        let pb::ListSizesRequest { provider, region } = request.into_inner();
        let provider = convert::provider(provider).map_err(|e| status(e.into()))?;
        let sizes = self
            .provisioner
            .list_sizes(provider, &region)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ListSizesResponse {
            sizes: sizes.into_iter().map(convert::size).collect(),
        }))
    }

    async fn provision(
        &self,
        request: Request<pb::ProvisionRequest>,
    ) -> Result<Response<pb::ProvisionResponse>, Status> {
        let input = convert::provision_input(request.into_inner()).map_err(|e| status(e.into()))?;
        let provision = self.provisioner.provision(input).await.map_err(status)?;
        Ok(Response::new(pb::ProvisionResponse {
            provision: Some(convert::provision(provision)),
        }))
    }

    async fn get_provision(
        &self,
        request: Request<pb::GetProvisionRequest>,
    ) -> Result<Response<pb::GetProvisionResponse>, Status> {
        let id = convert::provision_id(&request.into_inner().id)?;
        let provision = self.provisioner.get_provision(&id).await.map_err(status)?;
        Ok(Response::new(pb::GetProvisionResponse {
            provision: Some(convert::provision(provision)),
        }))
    }

    async fn list_provisions(
        &self,
        request: Request<pb::ListProvisionsRequest>,
    ) -> Result<Response<pb::ListProvisionsResponse>, Status> {
        let pb::ListProvisionsRequest {
            page_size,
            page_token,
        } = request.into_inner();
        let page = self
            .provisioner
            .list_provisions(page_size, &page_token)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ListProvisionsResponse {
            provisions: page
                .provisions
                .into_iter()
                .map(convert::provision)
                .collect(),
            next_page_token: page.next_page_token,
        }))
    }

    type WatchProvisionStream =
        futures::stream::BoxStream<'static, Result<pb::ProvisionEvent, Status>>;

    async fn watch_provision(
        &self,
        request: Request<pb::WatchProvisionRequest>,
    ) -> Result<Response<Self::WatchProvisionStream>, Status> {
        let id = convert::provision_id(&request.into_inner().id)?;
        let subscription = self
            .provisioner
            .watch_provision(&id)
            .await
            .map_err(status)?;
        Ok(Response::new(subscription_stream(subscription, event)))
    }

    async fn cancel_provision(
        &self,
        request: Request<pb::CancelProvisionRequest>,
    ) -> Result<Response<pb::CancelProvisionResponse>, Status> {
        let id = convert::provision_id(&request.into_inner().id)?;
        let provision = self
            .provisioner
            .cancel_provision(&id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::CancelProvisionResponse {
            provision: Some(convert::provision(provision)),
        }))
    }

    async fn retry_provision(
        &self,
        request: Request<pb::RetryProvisionRequest>,
    ) -> Result<Response<pb::ProvisionResponse>, Status> {
        let pb::RetryProvisionRequest { id, request_id } = request.into_inner();
        let id = convert::provision_id(&id)?;
        let provision = self
            .provisioner
            .retry_provision(&id, request_id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ProvisionResponse {
            provision: Some(convert::provision(provision)),
        }))
    }
}

#[cfg(test)]
mod tests;
