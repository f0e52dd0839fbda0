//! The only module that touches the generated gRPC clients. It owns the gRPC-web channel
//! (same origin as the page), the client type aliases with the bearer-token interceptor,
//! and the mapping of `tonic::Status` to [`ApiError`]. Pages call the methods of [`Api`],
//! which they get with [`use_api`].
mod credentials;
mod error;
mod nodes;
mod provisioner;
mod tokens;

use leptos::prelude::{expect_context, provide_context};
use levelrail_proto::auth::v1::api_tokens_service_client::ApiTokensServiceClient;
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic_web_wasm_client::Client;

pub use credentials::CredentialInput;
pub use error::{ApiError, ErrorKind};

use crate::session::Session;

/// The message types pages work with (re-exported so pages need not name the proto crate's
/// module layout).
pub mod types {
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

/// The gRPC-web transport every client shares.
type Channel = InterceptedService<Client, Bearer>;
/// CredentialsService over gRPC-web with the bearer token.
pub(crate) type CredentialsClient = CredentialsServiceClient<Channel>;
/// ProvisionerService over gRPC-web with the bearer token.
pub(crate) type ProvisionerClient = ProvisionerServiceClient<Channel>;
/// NodesService over gRPC-web with the bearer token.
pub(crate) type NodesClient = NodesServiceClient<Channel>;
/// ApiTokensService over gRPC-web with the bearer token.
pub(crate) type TokensClient = ApiTokensServiceClient<Channel>;

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub(crate) struct Bearer(MetadataValue<Ascii>);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

impl Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
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

/// A gRPC-web channel authenticated with `token`.
fn channel(token: &str) -> Result<Channel, ApiError> {
    let value = format!("Bearer {token}")
        .parse::<MetadataValue<Ascii>>()
        .map_err(|_| ApiError {
            kind: ErrorKind::SignedOut,
            message: "That API token contains characters a token cannot have.".into(),
            field: None,
        })?;
    Ok(InterceptedService::new(
        Client::new(origin()),
        Bearer(value),
    ))
}

impl Api {
    fn channel(&self) -> Result<Channel, ApiError> {
        let token = self
            .session
            .token_untracked()
            .ok_or_else(ApiError::signed_out)?;
        channel(&token)
    }

    fn credentials(&self) -> Result<CredentialsClient, ApiError> {
        Ok(CredentialsServiceClient::new(self.channel()?))
    }

    fn provisioner(&self) -> Result<ProvisionerClient, ApiError> {
        Ok(ProvisionerServiceClient::new(self.channel()?))
    }

    fn nodes(&self) -> Result<NodesClient, ApiError> {
        Ok(NodesServiceClient::new(self.channel()?))
    }

    fn tokens(&self) -> Result<TokensClient, ApiError> {
        Ok(ApiTokensServiceClient::new(self.channel()?))
    }

    /// Converts a failed call; a refused token signs the session out (the app then shows
    /// the sign-in page).
    fn fail(&self, status: tonic::Status) -> ApiError {
        let e = ApiError::from(status);
        if e.kind == ErrorKind::SignedOut {
            self.session.sign_out();
        }
        e
    }

    /// Checks a token before signing in with it (one cheap authenticated call).
    pub async fn check_token(token: &str) -> Result<(), ApiError> {
        let mut client = CredentialsServiceClient::new(channel(token)?);
        client
            .list_providers(levelrail_proto::credentials::v1::ListProvidersRequest {})
            .await
            .map(|_| ())
            .map_err(ApiError::from)
    }
}
