//! `levelrail-credentials serve`: the credentials service as its own process. Its public
//! listener serves `CredentialsService` (bearer API tokens, as all-in-one); its broker
//! listener, mTLS only and open to the provisioner's certificate alone, serves the
//! `CredentialBroker` (grants, and the change stream the provisioners cache by) and the
//! same `CredentialsService` and `ApiTokensService` for the provisioners to forward
//! operators' calls to (they checked the caller's API token already). Its own database, its own master key.
use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;
use levelrail_credentials::grpc::auth::BearerAuth;
use levelrail_credentials::grpc::{ApiTokensGrpc, BrokerService, CredentialsGrpc};
use levelrail_credentials::startup::{self, MasterKey, StorageConfig};
use levelrail_credentials::verify::Verifier;
use levelrail_proto::auth::v1::api_tokens_service_server::ApiTokensServiceServer;
use levelrail_proto::credentials::internal::v1::credential_broker_server::CredentialBrokerServer;
use levelrail_proto::credentials::v1::credentials_service_server::CredentialsServiceServer;
use secrecy::SecretString;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;

use crate::audit::AuditLog;
use crate::config::{CloudArgs, PublicArgs, StorageArgs, read_secret_file};
use crate::listener::{self, CREDENTIALS_MAX_MESSAGE, CallGuard};
use crate::pki::InternalTlsArgs;
use crate::startup::{Bound, health_listener, serve_all};

/// `levelrail-credentials serve` options.
#[derive(Debug, Clone, Args)]
pub struct CredentialsServeConfig {
    /// Where the state lives (its own database: not the provisioners').
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Public listener: `CredentialsService` over gRPC and gRPC-web. Plaintext only on a
    /// loopback address; elsewhere TLS with `--tls-cert`, or else the internal certificate.
    #[arg(long, env = "LEVELRAIL_LISTEN", default_value = "127.0.0.1:7444")]
    pub listen: SocketAddr,
    /// TLS and browser access of the public listener.
    #[command(flatten)]
    pub public: PublicArgs,
    /// On the first start, also save the admin API token to `admin.token` in the data
    /// directory (mode 0600). Without it the token is only printed, this once.
    #[arg(long)]
    pub write_admin_token: bool,
    /// The broker listener, for the provisioners only (mTLS).
    #[arg(
        long,
        env = "LEVELRAIL_BROKER_LISTEN",
        default_value = "127.0.0.1:7445"
    )]
    pub broker_listen: SocketAddr,
    /// The internal PKI's files (`levelrail pki init`): this service's certificate.
    #[command(flatten)]
    pub internal: InternalTlsArgs,
    /// The clouds' token endpoints and APIs (grants and verification probes).
    #[command(flatten)]
    pub clouds: CloudArgs,
    /// Master key (base64, 32 bytes) instead of the keyring file in the data directory:
    /// from `LEVELRAIL_MASTER_KEY` only (`config::master_key_from_env`), never a flag.
    #[arg(skip)]
    pub master_key: Option<MasterKey>,
    /// A file holding the master key (base64, 32 bytes; a mounted secret).
    #[arg(long, env = "LEVELRAIL_MASTER_KEY_FILE")]
    pub master_key_file: Option<std::path::PathBuf>,
    /// While a rotation rolls out, a file holding the master key that `--master-key-file`
    /// replaces (or `LEVELRAIL_MASTER_KEY_PREVIOUS`): the start re-wraps every credential
    /// sealed with it, after which it can be removed.
    #[arg(
        long,
        env = "LEVELRAIL_MASTER_KEY_PREVIOUS_FILE",
        requires = "master_key_file"
    )]
    pub previous_master_key_file: Option<std::path::PathBuf>,
    /// A plaintext listener answering only `grpc.health.v1` (for probes that speak no TLS).
    #[arg(long, env = "LEVELRAIL_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
}

/// The credentials service, built and bound.
#[derive(Debug)]
pub struct CredentialsServer {
    /// Its listeners: public, broker.
    pub bound: Vec<Bound>,
    /// The admin token, when this start created it.
    pub admin_token: Option<SecretString>,
    /// Stops it when sent `true`.
    pub shutdown: watch::Sender<bool>,
    /// Kept so a stop sent before the listeners run is held, not refused for want of a
    /// receiver.
    _stop_held: watch::Receiver<bool>,
}

impl CredentialsServer {
    /// Opens the data directory and database, and binds both listeners.
    pub async fn build(cfg: CredentialsServeConfig) -> anyhow::Result<Self> {
        crate::tls::install_crypto_provider();
        startup::ensure_data_dir(&cfg.storage.data_dir)?;
        let database_url = cfg.storage.database_url()?;
        let master_key = match &cfg.master_key_file {
            Some(path) => Some(MasterKey {
                current: read_secret_file(path, "--master-key-file")?,
                previous: match &cfg.previous_master_key_file {
                    Some(path) => Some(read_secret_file(path, "--previous-master-key-file")?),
                    None => crate::config::previous_master_key_from_env()?,
                },
            }),
            None => cfg.master_key.clone(),
        };
        let settings = crate::providers::configured(&cfg.clouds)?;
        let issuers = Arc::new(crate::providers::issuers(
            &settings,
            &crate::providers::Lending::from_args(&cfg.clouds, &cfg.storage.data_dir)?,
        )?);
        let clients = Arc::new(levelrail_clouds::clients(&settings));
        let credentials = startup::open(
            StorageConfig {
                data_dir: &cfg.storage.data_dir,
                database_url: database_url.as_ref(),
                master_key: master_key.as_ref(),
            },
            Verifier::new(clients, issuers.clone()),
            issuers,
        )
        .await?;
        let admin_token = credentials.bootstrap_api_tokens().await?;
        if let Some(token) = &admin_token {
            crate::startup::show_admin_token(&cfg.storage.data_dir, token, cfg.write_admin_token)?;
        }
        let api = || {
            CredentialsServiceServer::new(CredentialsGrpc::new(credentials.clone()))
                .max_decoding_message_size(CREDENTIALS_MAX_MESSAGE)
        };
        let tokens = || ApiTokensServiceServer::new(ApiTokensGrpc::new(credentials.clone()));
        let (health_reporter, health) = tonic_health::server::health_reporter();
        health_reporter
            .set_serving::<CredentialsServiceServer<CredentialsGrpc>>()
            .await;
        let auth = BearerAuth::new(credentials.api_tokens().clone());
        let public_routes = tonic::service::Routes::new(health.clone())
            .add_service(InterceptedService::new(api(), auth.clone()))
            .add_service(InterceptedService::new(tokens(), auth.clone()))
            .prepare()
            .into_axum_router();
        let public_router = listener::assemble(
            public_routes,
            None,
            &cfg.public.allowed_origins,
            cfg.public.max_concurrent_requests,
            CallGuard {
                auth: Some(auth),
                // This listener's calls are logged (target `levelrail::audit`); the audit
                // log operators query is the provisioners' (which forward these calls too).
                audit: Some(Arc::new(AuditLog::lines_only())),
                per_token: cfg.public.per_token_budget(),
            },
            &[crate::rest::CREDENTIALS_SERVICE],
        )?;
        let public_tls = match (&cfg.public.tls_cert, &cfg.public.tls_key) {
            (Some(cert), Some(key)) => Some(crate::tls::from_files(cert, key)?),
            _ if cfg.public.tls || !cfg.listen.ip().is_loopback() => Some(crate::tls::from_files(
                &cfg.internal.internal_cert,
                &cfg.internal.internal_key,
            )?),
            _ => None,
        };
        let broker_routes = tonic::service::Routes::new(health)
            .add_service(CredentialBrokerServer::new(BrokerService::new(
                credentials.clone(),
            )))
            .add_service(api())
            .add_service(tokens())
            .prepare()
            .into_axum_router()
            .layer(axum::middleware::from_fn(crate::pki::require_provisioner));
        let broker_tls = cfg.internal.server_config()?;
        let mut bound = vec![
            Bound::bind("public", cfg.listen, public_router, public_tls).await?,
            Bound::bind("broker", cfg.broker_listen, broker_routes, Some(broker_tls)).await?,
        ];
        if let Some(addr) = cfg.health_listen {
            bound.push(health_listener::<CredentialsServiceServer<CredentialsGrpc>>(addr).await?);
        }
        let (shutdown, _stop_held) = watch::channel(false);
        Ok(Self {
            bound,
            admin_token,
            shutdown,
            _stop_held,
        })
    }

    /// Serves until stopped (Ctrl-C, SIGTERM, or the stopper).
    pub async fn run_until_stopped(self) {
        serve_all(self.bound, self.shutdown).await;
    }
}
