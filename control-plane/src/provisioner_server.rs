//! `levelrail-provisioner serve`: the provisioner as its own process, one of several
//! replicas on one PostgreSQL database. Grants come from the credentials service over mTLS
//! ([`GrpcBroker`], cached, kept honest by its change stream, which also carries the API
//! tokens this replica checks operators' calls against). The node CA, the control-plane id
//! and the provisions are the shared database's, so any replica drives, watches, enrolls
//! and resumes any provision. Operators' `CredentialsService` calls are forwarded to the
//! credentials service, so the CLI and the web app need one API URL.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_credentials::app::api_token::ApiTokenVerifier;
use levelrail_credentials::grpc::auth::BearerAuth;
use levelrail_credentials::grpc::digest_from_proto;
use levelrail_proto::auth::v1 as apb;
use levelrail_proto::auth::v1::api_tokens_service_client::ApiTokensServiceClient;
use levelrail_proto::auth::v1::api_tokens_service_server::{
    ApiTokensService, ApiTokensServiceServer,
};
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::credentials::v1::credentials_service_server::{
    CredentialsService, CredentialsServiceServer,
};
use levelrail_proto::provisioner::v1::provisioner_service_server::ProvisionerServiceServer;
use levelrail_provisioner::grpc::{BrokerTls, GrpcBroker, ProvisionerGrpc};
use secrecy::ExposeSecret as _;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::config::{CloudArgs, FrontArgs, StorageArgs};
use crate::pki::{CREDENTIALS_HOST, InternalTlsArgs};
use crate::provisioning::ProvisionerState;
use crate::startup::{CredentialsApi, FrontConfig, ProvisionerFront};

/// `levelrail-provisioner serve` options.
#[derive(Debug, Clone, Args)]
pub struct ProvisionerServeConfig {
    /// The shared database (`postgres://…` for several replicas) and this replica's data
    /// directory.
    #[command(flatten)]
    pub storage: StorageArgs,
    /// The provisioner's listeners.
    #[command(flatten)]
    pub front: FrontArgs,
    /// The clouds' endpoints.
    #[command(flatten)]
    pub clouds: CloudArgs,
    /// The credentials service's broker listener, e.g. `https://levelrail-credentials:7445`.
    #[arg(long, env = "LEVELRAIL_CREDENTIALS_URL")]
    pub credentials_url: String,
    /// The name the credentials service's certificate must hold (default
    /// `levelrail-credentials`, which `levelrail pki init` always includes).
    #[arg(long, env = "LEVELRAIL_CREDENTIALS_NAME", default_value = CREDENTIALS_HOST)]
    pub credentials_name: String,
    /// The internal PKI's files (`levelrail pki init`): the provisioner's client certificate.
    #[command(flatten)]
    pub internal: InternalTlsArgs,
    /// The key (32 random bytes) sealing join tokens and the node CA's key in the shared
    /// database: every replica is given the same file (`head -c 32 /dev/urandom > FILE`,
    /// mode 0600, once for the whole deployment). It is never created here: a replica with
    /// a new key could open nothing the others sealed.
    #[arg(long, env = "LEVELRAIL_SEALING_KEY_FILE")]
    pub sealing_key_file: PathBuf,
    /// A plaintext listener answering only `grpc.health.v1` (for probes that speak no TLS).
    #[arg(long, env = "LEVELRAIL_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
}

/// Builds, binds and serves a provisioner replica until it is stopped.
pub async fn run(cfg: ProvisionerServeConfig) -> anyhow::Result<()> {
    let health = match cfg.health_listen {
        Some(addr) => vec![
            crate::startup::health_listener::<ProvisionerServiceServer<ProvisionerGrpc>>(addr)
                .await?,
        ],
        None => Vec::new(),
    };
    build(cfg).await?.run_until_stopped(health).await
}

/// Builds and binds a provisioner replica.
pub async fn build(cfg: ProvisionerServeConfig) -> anyhow::Result<ProvisionerFront> {
    crate::tls::install_crypto_provider();
    levelrail_credentials::startup::ensure_data_dir(&cfg.storage.data_dir)?;
    let is_postgres = cfg
        .storage
        .database_url()?
        .is_some_and(|u| u.expose_secret().starts_with("postgres"));
    anyhow::ensure!(
        is_postgres,
        "levelrail-provisioner serve needs the replicas' shared PostgreSQL database: set \
         DATABASE_URL (or --database-url-file) to postgres://…; one process on SQLite is \
         `levelrail serve`"
    );
    let state = ProvisionerState::shared(&cfg.storage, &cfg.sealing_key_file).await?;
    let agent_listener =
        crate::startup::bind(cfg.front.nodes.agent_listen, "the agent listener").await?;
    let settings = crate::providers::configured(&cfg.clouds)?;
    let clients = Arc::new(levelrail_clouds::clients(&settings));
    let (ca_pem, cert_pem, key_pem) = cfg.internal.read()?;
    let broker = GrpcBroker::connect(
        &cfg.credentials_url,
        Some(BrokerTls {
            ca_pem,
            cert_pem,
            key_pem,
            server_name: Some(cfg.credentials_name.clone()),
        }),
    )?;
    let tokens = ApiTokenVerifier::awaiting_sync();
    let synced = tokens.clone();
    // The task lives as long as the process.
    drop(broker.spawn_watch(move |digests| {
        synced.replace_all(digests.into_iter().filter_map(digest_from_proto));
    }));
    let forwarded = CredentialsApi {
        credentials: CredentialsServiceServer::new(ForwardedCredentials {
            client: CredentialsServiceClient::new(broker.channel()),
        }),
        tokens: ApiTokensServiceServer::new(ForwardedTokens {
            client: ApiTokensServiceClient::new(broker.channel()),
        }),
    };
    let registry = Arc::new(ProviderRegistry::new(Arc::new(broker), clients));
    ProvisionerFront::build(
        FrontConfig {
            args: &cfg.front,
            web_dir: cfg.front.web_dir.clone(),
            allow_loopback: false,
        },
        state,
        registry,
        agent_listener,
        Some(forwarded),
        BearerAuth::new(tokens),
    )
    .await
}

/// The operators' credentials API, forwarded to the credentials service over the internal
/// channel once this replica has checked the caller's API token.
#[derive(Debug, Clone)]
struct ForwardedCredentials {
    client: CredentialsServiceClient<Channel>,
}

#[tonic::async_trait]
impl CredentialsService for ForwardedCredentials {
    async fn set_credential(
        &self,
        request: Request<pb::SetCredentialRequest>,
    ) -> Result<Response<pb::SetCredentialResponse>, Status> {
        self.client
            .clone()
            .set_credential(request.into_inner())
            .await
    }

    async fn delete_credential(
        &self,
        request: Request<pb::DeleteCredentialRequest>,
    ) -> Result<Response<pb::DeleteCredentialResponse>, Status> {
        self.client
            .clone()
            .delete_credential(request.into_inner())
            .await
    }

    async fn list_providers(
        &self,
        request: Request<pb::ListProvidersRequest>,
    ) -> Result<Response<pb::ListProvidersResponse>, Status> {
        self.client
            .clone()
            .list_providers(request.into_inner())
            .await
    }

    async fn verify_credential(
        &self,
        request: Request<pb::VerifyCredentialRequest>,
    ) -> Result<Response<pb::VerifyCredentialResponse>, Status> {
        self.client
            .clone()
            .verify_credential(request.into_inner())
            .await
    }
}

/// The operators' API tokens, forwarded like [`ForwardedCredentials`].
#[derive(Debug, Clone)]
struct ForwardedTokens {
    client: ApiTokensServiceClient<Channel>,
}

#[tonic::async_trait]
impl ApiTokensService for ForwardedTokens {
    async fn create_api_token(
        &self,
        request: Request<apb::CreateApiTokenRequest>,
    ) -> Result<Response<apb::CreateApiTokenResponse>, Status> {
        self.client
            .clone()
            .create_api_token(request.into_inner())
            .await
    }

    async fn list_api_tokens(
        &self,
        request: Request<apb::ListApiTokensRequest>,
    ) -> Result<Response<apb::ListApiTokensResponse>, Status> {
        self.client
            .clone()
            .list_api_tokens(request.into_inner())
            .await
    }

    async fn revoke_api_token(
        &self,
        request: Request<apb::RevokeApiTokenRequest>,
    ) -> Result<Response<apb::RevokeApiTokenResponse>, Status> {
        self.client
            .clone()
            .revoke_api_token(request.into_inner())
            .await
    }
}
