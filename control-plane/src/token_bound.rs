//! A streamed answer (`Watch…`) lives no longer than the API token that opened it: once the
//! token is revoked (this process learns it at once, a replica within a second) or expires,
//! the stream ends with `UNAUTHENTICATED`, as a new call with that token would.
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use http_body::Frame;
use levelrail_credentials::app::api_token::ApiTokenVerifier;
use tokio::sync::watch;

/// `answer`, ended when token `token_id` stops authenticating in `verifier`.
pub(crate) fn bound(answer: Response, verifier: ApiTokenVerifier, token_id: String) -> Response {
    let expiry = verifier
        .live_until(&token_id)
        .flatten()
        .map(|at| Box::pin(tokio::time::sleep(until(at))));
    let (parts, body) = answer.into_parts();
    let removals = rearm(verifier.removals());
    Response::from_parts(
        parts,
        Body::new(TokenBound {
            inner: body,
            verifier,
            token_id,
            removals,
            expiry,
            ended: false,
        }),
    )
}

/// How long from now until `at` (zero when it has passed).
fn until(at: time::OffsetDateTime) -> std::time::Duration {
    (at - time::OffsetDateTime::now_utc())
        .try_into()
        .unwrap_or_default()
}

type Removal = Pin<Box<dyn Future<Output = Option<watch::Receiver<u64>>> + Send>>;

/// Waits for the next removal of a token; `None` once the verifier is gone.
fn rearm(mut removals: watch::Receiver<u64>) -> Removal {
    Box::pin(async move { removals.changed().await.ok().map(|()| removals) })
}

struct TokenBound {
    inner: Body,
    verifier: ApiTokenVerifier,
    token_id: String,
    removals: Removal,
    expiry: Option<Pin<Box<tokio::time::Sleep>>>,
    ended: bool,
}

impl TokenBound {
    /// Whether the token stopped authenticating (checked when a removal or the expiry
    /// wakes the stream).
    fn token_gone(&mut self, cx: &mut Context<'_>) -> bool {
        let mut check = false;
        while let Poll::Ready(next) = self.removals.as_mut().poll(cx) {
            match next {
                Some(rx) => {
                    self.removals = rearm(rx);
                    check = true;
                }
                None => {
                    self.removals = Box::pin(std::future::pending());
                    break;
                }
            }
        }
        if let Some(expiry) = self.expiry.as_mut()
            && expiry.as_mut().poll(cx).is_ready()
        {
            self.expiry = None;
            check = true;
        }
        check && self.verifier.live_until(&self.token_id).is_none()
    }
}

impl http_body::Body for TokenBound {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if self.token_gone(cx) {
            self.ended = true;
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("16"));
            trailers.insert(
                "grpc-message",
                http::HeaderValue::from_static(ENDED_ENCODED),
            );
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }
}

/// Why the stream ended ("the API token of this stream was revoked or has expired"),
/// percent-encoded as `grpc-message` carries it.
const ENDED_ENCODED: &str =
    "the%20API%20token%20of%20this%20stream%20was%20revoked%20or%20has%20expired";
