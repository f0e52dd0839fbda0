//! The only module that calls the control plane. It speaks gRPC-web to the server that
//! served the page (`transport`, the protocol's own messages from `levelrail-proto`), adds
//! the bearer token, and maps a failed call to [`ApiError`]. Pages call the methods of
//! [`Api`], which they get with [`use_api`].
mod audit;
mod credentials;
mod error;
mod nodes;
mod provisioner;
mod tokens;
mod transport;

use leptos::prelude::{expect_context, provide_context};
use prost::Message;

pub use credentials::CredentialInput;
pub use error::{ApiError, ErrorKind};

use crate::logic::grpc_web::Status;
use crate::session::Session;

/// The message types pages work with (re-exported so pages need not name the proto crate's
/// module layout).
pub mod types {
    pub use levelrail_proto::audit::v1::AuditEvent;
    pub use levelrail_proto::auth::v1::{ApiTokenInfo, ApiTokenScope};
    pub use levelrail_proto::credentials::v1::{
        PermissionCheck, Provider, ProviderStatus, credential_identity,
    };
    pub use levelrail_proto::nodes::v1::{
        AdoptOrphanResponse, ListNodesRequest, ListNodesResponse, Node, NodeStatus, Orphan,
        OrphanReason, OrphanState, WorkloadKind,
    };
    pub use levelrail_proto::provisioner::v1::{
        CleanupOutcome, CleanupResult, InstallStep, PlacementOutcome, Provision, ProvisionRequest,
        ProvisionStatus, Region, Role, Size,
    };
}

/// The API of the control plane this page was served by.
#[derive(Debug, Clone, Copy)]
pub struct Api {
    session: Session,
}

/// Provides the [`Api`] to every component below.
pub fn provide_api(session: Session) {
    provide_context(Api { session });
}

/// The [`Api`] provided by the app root.
pub fn use_api() -> Api {
    expect_context::<Api>()
}

/// The page's origin: the server that served the bundle also serves gRPC-web.
fn origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}

/// `token` as a header value can carry it (visible ASCII), or why not.
fn usable(token: &str) -> Result<&str, ApiError> {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()) {
        return Ok(token);
    }
    Err(ApiError {
        kind: ErrorKind::SignedOut,
        message: "That API token contains characters a token cannot have.".into(),
        field: None,
    })
}

/// Calls `path` with `token`.
async fn call<Req: Message, Resp: Message + Default>(
    token: &str,
    path: &str,
    request: Req,
) -> Result<Resp, Status> {
    transport::unary(&origin(), token, path, &request).await
}

impl Api {
    fn token(&self) -> Result<String, ApiError> {
        let token = self
            .session
            .token_untracked()
            .ok_or_else(ApiError::signed_out)?;
        usable(&token)?;
        Ok(token)
    }

    /// Calls `path` (`/package.Service/Method`) with the session's token.
    async fn unary<Req: Message, Resp: Message + Default>(
        &self,
        path: &str,
        request: Req,
    ) -> Result<Resp, ApiError> {
        let token = self.token()?;
        call(&token, path, request).await.map_err(|s| self.fail(s))
    }

    /// Opens the server stream of `path`.
    async fn streaming<Req: Message, Resp: Message + Default>(
        &self,
        path: &str,
        request: Req,
    ) -> Result<transport::Streaming<Resp>, ApiError> {
        let token = self.token()?;
        transport::server_streaming(&origin(), &token, path, &request)
            .await
            .map_err(|s| self.fail(s))
    }

    /// Converts a failed call; a refused token signs the session out (the app then shows
    /// the sign-in page).
    fn fail(&self, status: Status) -> ApiError {
        let e = ApiError::from(status);
        if e.kind == ErrorKind::SignedOut {
            self.session.sign_out();
        }
        e
    }

    /// Checks a token before signing in with it (one cheap authenticated call).
    pub async fn check_token(token: &str) -> Result<(), ApiError> {
        call::<_, levelrail_proto::credentials::v1::ListProvidersResponse>(
            usable(token)?,
            credentials::LIST_PROVIDERS,
            levelrail_proto::credentials::v1::ListProvidersRequest {},
        )
        .await
        .map(|_| ())
        .map_err(ApiError::from)
    }
}
