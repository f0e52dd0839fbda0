//! `App::build` binds the listeners (port 0 allowed) and wires both services; tests use
//! exactly this path. `run_until_stopped` serves until Ctrl-C / SIGTERM or `stop()`.
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_credentials::app::Credentials;
use levelrail_credentials::verify::Verifier;

use crate::agent_binaries::AgentBinaries;
use crate::bridge::InProcessBroker;
#[cfg(feature = "demo")]
use crate::demo::{Demo, DemoSettings, demo_full_regions};
use levelrail_credentials::grpc::auth::BearerAuth;
use levelrail_credentials::grpc::{ApiTokensGrpc, CredentialsGrpc};
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_proto::auth::v1::api_tokens_service_server::{
    ApiTokensService, ApiTokensServiceServer,
};
use levelrail_proto::credentials::v1::credentials_service_server::{
    CredentialsService, CredentialsServiceServer,
};
use levelrail_proto::provisioner::v1::provisioner_service_server::ProvisionerServiceServer;
use levelrail_provisioner::app::Nodes;
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::grpc::{AuditGrpc, NodesGrpc, ProvisionerGrpc};
use levelrail_provisioner::model::ports::AuditStore;

use crate::audit::AuditLog;
use secrecy::{ExposeSecret as _, SecretString};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;
use tracing::info;

use crate::config::{FrontArgs, PublicArgs, ServeConfig};
use crate::listener::{self, CREDENTIALS_MAX_MESSAGE, CallGuard};
use crate::provisioning::ProvisionerState;
use crate::tls;

/// A built, bound, not yet serving control plane.
#[derive(Debug)]
pub struct App {
    front: ProvisionerFront,
    registry: Arc<ProviderRegistry>,
    #[cfg(feature = "demo")]
    demo: Option<Demo>,
    credentials: Credentials,
    admin_token: Option<SecretString>,
}

impl App {
    /// Opens the data directory (creating the master keyring, CA and admin token on first
    /// start), builds the services and binds the public listener.
    pub async fn build(cfg: ServeConfig) -> anyhow::Result<Self> {
        #[cfg(feature = "demo")]
        return Self::build_with_boot(cfg, None).await;
        #[cfg(not(feature = "demo"))]
        {
            anyhow::ensure!(
                !cfg.demo,
                "--demo needs the `demo` cargo feature, and this levelrail was built without it \
                 (--no-default-features): rebuild with `--features demo`"
            );
            prepare(&cfg)?;
            Self::assemble(cfg).await
        }
    }

    /// [`App::build`], with the demo clouds' servers booting through `boot` instead of the
    /// boot harness (the real-boot tests boot them in a system container).
    #[cfg(feature = "demo")]
    pub async fn build_with_boot(
        cfg: ServeConfig,
        boot: Option<levelrail_sim::fakes::BootHook>,
    ) -> anyhow::Result<Self> {
        prepare(&cfg)?;
        let demo = match cfg.demo {
            true => {
                let lifetime = cfg
                    .demo_token_lifetime
                    .as_deref()
                    .map(levelrail_provisioner::model::provision::parse_go_duration)
                    .transpose()
                    .map_err(|e| anyhow::anyhow!("--demo-token-lifetime: {e}"))?;
                let settings = DemoSettings {
                    token_lifetime: lifetime,
                    full_regions: demo_full_regions(&cfg.demo_full_regions),
                };
                Some(Demo::start(&cfg.storage.data_dir, boot, settings).await?)
            }
            false => None,
        };
        Self::assemble(cfg, demo).await
    }

    /// Wires both services and binds the listeners; with the `demo` feature, `demo` holds
    /// the simulated clouds when `--demo` started them.
    async fn assemble(
        cfg: ServeConfig,
        #[cfg(feature = "demo")] demo: Option<Demo>,
    ) -> anyhow::Result<Self> {
        // Bound first: the agent address goes into every provision's user-data.
        let agent_listener = bind(cfg.front.nodes.agent_listen, "the agent listener").await?;
        #[cfg(feature = "demo")]
        let settings = match &demo {
            Some(d) => d.settings.clone(),
            None => crate::providers::configured(&cfg.clouds)?,
        };
        #[cfg(not(feature = "demo"))]
        let settings = crate::providers::configured(&cfg.clouds)?;
        let lending = crate::providers::Lending::from_args(&cfg.clouds, &cfg.storage.data_dir)?;
        let issuers = crate::providers::issuers(&settings, &lending)?;
        let clients = Arc::new(levelrail_clouds::clients(&settings));
        let issuers = Arc::new(issuers);
        let database_url = cfg.storage.database_url()?;
        let credentials = startup::open(
            StorageConfig {
                data_dir: &cfg.storage.data_dir,
                database_url: database_url.as_ref(),
                master_key: cfg.master_key.as_ref(),
            },
            Verifier::new(clients.clone(), issuers.clone()),
            issuers,
        )
        .await?;
        let state = ProvisionerState::in_data_dir(&cfg.storage, &credentials).await?;
        let registry = Arc::new(ProviderRegistry::new(
            Arc::new(InProcessBroker::new(credentials.clone())),
            clients,
        ));
        #[cfg(feature = "demo")]
        if let Some(d) = &demo {
            d.connect(&credentials).await?;
            if cfg.demo_stray_server {
                d.plant_stray_server(&registry, &state.control_plane_id)
                    .await?;
            }
        }
        #[cfg(feature = "demo")]
        let fleet = cfg.demo_fleet.filter(|_| demo.is_some());
        let admin_token = credentials.bootstrap_api_tokens().await?;
        if let Some(token) = &admin_token {
            show_admin_token(&cfg.storage.data_dir, token, cfg.write_admin_token)?;
        }
        let front = ProvisionerFront::build(
            FrontConfig {
                args: &cfg.front,
                web_dir: cfg.front.web_dir.clone().or_else(default_web_dir),
                allow_loopback: cfg.demo,
            },
            state,
            registry.clone(),
            agent_listener,
            Some(CredentialsApi {
                credentials: CredentialsServiceServer::new(CredentialsGrpc::new(
                    credentials.clone(),
                )),
                tokens: ApiTokensServiceServer::new(ApiTokensGrpc::new(credentials.clone())),
            }),
            BearerAuth::new(credentials.api_tokens().clone()),
        )
        .await?;
        #[cfg(feature = "demo")]
        if let Some(count) = fleet {
            crate::demo::enroll_fleet(&front.provisioning.nodes, count).await?;
        }
        Ok(Self {
            front,
            registry,
            #[cfg(feature = "demo")]
            demo,
            credentials,
            admin_token,
        })
    }

    /// The bound public address.
    pub fn local_addr(&self) -> SocketAddr {
        self.front.public.addr
    }

    /// The bound agent listener address.
    pub fn agent_addr(&self) -> SocketAddr {
        self.front.agent.addr
    }

    /// The provider registry.
    pub fn registry(&self) -> &Arc<ProviderRegistry> {
        &self.registry
    }

    /// The demo clouds, when running with `--demo`.
    #[cfg(feature = "demo")]
    pub fn demo(&self) -> Option<&Demo> {
        self.demo.as_ref()
    }

    /// The provisioner state (provisions and their workflow).
    pub fn provisioner(&self) -> &Arc<levelrail_provisioner::app::Provisioner> {
        &self.front.provisioning.provisioner
    }

    /// The node registry.
    pub fn nodes(&self) -> &Arc<Nodes> {
        &self.front.provisioning.nodes
    }

    /// Whether the public listener speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.front.public.tls.is_some()
    }

    /// The admin token, when this start created it (first start only).
    pub fn admin_token(&self) -> Option<&SecretString> {
        self.admin_token.as_ref()
    }

    /// The credentials service (for tests and wiring).
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The control-plane CA.
    pub fn ca(&self) -> &Arc<ControlPlaneCa> {
        &self.front.ca
    }

    /// A handle that stops the server when sent `true` (before it runs, too).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.front.shutdown.clone()
    }

    /// Serves until stopped (Ctrl-C, SIGTERM, or the stopper).
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.front.run_until_stopped(Vec::new()).await
    }
}

/// A bound listener and what it serves.
#[derive(Debug)]
pub struct Bound {
    /// What it is, for the log.
    pub name: &'static str,
    /// The socket.
    pub listener: TcpListener,
    /// Its address.
    pub addr: SocketAddr,
    /// What it serves.
    pub router: axum::Router,
    /// Its TLS, when not plaintext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Bound {
    /// Binds `addr` for `router`.
    pub async fn bind(
        name: &'static str,
        addr: SocketAddr,
        router: axum::Router,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> anyhow::Result<Self> {
        let listener = bind(addr, name).await?;
        Ok(Self {
            name,
            addr: listener.local_addr()?,
            listener,
            router,
            tls,
        })
    }
}

/// Serves every listener of `bound` until `shutdown` turns true (Ctrl-C and SIGTERM turn
/// it).
pub async fn serve_all(bound: Vec<Bound>, shutdown: watch::Sender<bool>) {
    let rx = shutdown.subscribe();
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = shutdown.send(true);
    });
    let tasks: Vec<_> = bound
        .into_iter()
        .map(|b| {
            info!(listener = b.name, addr = %b.addr, tls = b.tls.is_some(), "listening");
            let limits = if b.name == "agent" {
                listener::ConnectionLimits::agent()
            } else {
                listener::ConnectionLimits::default()
            };
            tokio::spawn(listener::serve_within(
                b.listener,
                b.router,
                b.tls,
                rx.clone(),
                limits,
            ))
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// A plaintext listener on `addr` answering only `grpc.health.v1`, `S` reported serving:
/// for probes that speak no TLS (Kubernetes' gRPC probes).
pub async fn health_listener<S: tonic::server::NamedService>(
    addr: SocketAddr,
) -> anyhow::Result<Bound> {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter.set_serving::<S>().await;
    let router = tonic::service::Routes::new(health)
        .prepare()
        .into_axum_router();
    Bound::bind("health", addr, router, None).await
}

pub(crate) async fn bind(addr: SocketAddr, what: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {what} {addr}"))
}

/// The credentials service's public API as a provisioner's listener serves it: its own
/// (all-in-one) or forwarded to it (a replica).
#[derive(Debug)]
pub struct CredentialsApi<C, T> {
    /// `CredentialsService`.
    pub credentials: CredentialsServiceServer<C>,
    /// `ApiTokensService`.
    pub tokens: ApiTokensServiceServer<T>,
}

/// What the provisioner's listeners are configured with.
#[derive(Debug)]
pub struct FrontConfig<'a> {
    /// The listeners' settings.
    pub args: &'a FrontArgs,
    /// The web app to serve, if any.
    pub web_dir: Option<PathBuf>,
    /// A loopback agent address is accepted (the demo).
    pub allow_loopback: bool,
}

/// The provisioner's side of a process, bound: the public listener (provisions, nodes,
/// orphans, health, reflection; all-in-one also the credentials API) and the agent
/// listener, over the assembled provisioner.
#[derive(Debug)]
pub struct ProvisionerFront {
    /// Nodes, provisions and their workflow.
    pub provisioning: crate::provisioning::Provisioning,
    /// The node CA.
    pub ca: Arc<ControlPlaneCa>,
    /// The public listener.
    pub public: Bound,
    /// The agent listener.
    pub agent: Bound,
    /// Stops both when sent `true`.
    pub shutdown: watch::Sender<bool>,
    /// The audit log of the public listener, flushed once it stops.
    pub audit: Arc<AuditLog>,
    /// Kept so a stop sent before the listeners run is held, not refused for want of a
    /// receiver.
    _stop_held: watch::Receiver<bool>,
}

impl ProvisionerFront {
    /// Assembles the provisioner over `state` and `registry` and binds its listeners (the
    /// agent listener is bound already: its address goes into the user-data). `credentials`
    /// adds the credentials API to the public listener; `auth` checks every operator call.
    pub async fn build<C: CredentialsService, T: ApiTokensService>(
        cfg: FrontConfig<'_>,
        state: ProvisionerState,
        registry: Arc<ProviderRegistry>,
        agent_listener: TcpListener,
        credentials: Option<CredentialsApi<C, T>>,
        auth: BearerAuth,
    ) -> anyhow::Result<Self> {
        let FrontArgs {
            listen,
            public,
            tls_sans,
            nodes,
            ..
        } = cfg.args;
        let agent_addr = agent_listener.local_addr()?;
        let ca = Arc::clone(&state.ca);
        let binaries = AgentBinaries::load(&nodes.agent_binaries)?;
        let audit_store: Arc<dyn AuditStore> = state.store.clone();
        let audit = Arc::new(AuditLog::start(Arc::clone(&audit_store)));
        let provisioning = crate::provisioning::build(
            nodes,
            cfg.allow_loopback,
            state,
            registry,
            agent_addr,
            &binaries,
        )
        .await?;
        let mut rest_services = crate::rest::PROVISIONER_SERVICES.to_vec();
        if credentials.is_some() {
            rest_services.push(crate::rest::CREDENTIALS_SERVICE);
        }
        let grpc = grpc_routes(auth.clone(), credentials, &provisioning, audit_store);
        let router = listener::assemble(
            grpc,
            cfg.web_dir,
            &public.allowed_origins,
            public.max_concurrent_requests,
            CallGuard {
                auth: Some(auth),
                audit: Some(Arc::clone(&audit)),
                per_token: public.per_token_budget(),
            },
            &rest_services,
        )?;
        let tls = tls_config(public, tls_sans, *listen, &ca)?;
        let public = Bound::bind("public", *listen, router, tls).await?;
        let mut agent_hosts = server_hosts(tls_sans, nodes.agent_listen);
        // curl on the node checks the advertised host against the certificate.
        let advertised_host = host_of(&provisioning.advertised);
        if !agent_hosts.iter().any(|h| h == advertised_host) {
            agent_hosts.push(advertised_host.to_owned());
        }
        let agent_tls = crate::agent::tls(&ca, &agent_hosts)?;
        let agent_router =
            crate::agent::router(provisioning.nodes.clone()).merge(binaries.router());
        info!(fingerprint = %ca.fingerprint(), "node CA");
        let agent = Bound {
            name: "agent",
            listener: agent_listener,
            addr: agent_addr,
            router: agent_router,
            tls: Some(agent_tls),
        };
        let (shutdown, _stop_held) = watch::channel(false);
        Ok(Self {
            provisioning,
            ca,
            public,
            agent,
            shutdown,
            audit,
            _stop_held,
        })
    }

    /// Serves both listeners and `more` until stopped (Ctrl-C, SIGTERM, or the stopper).
    pub async fn run_until_stopped(self, more: Vec<Bound>) -> anyhow::Result<()> {
        let mut bound = vec![self.public, self.agent];
        bound.extend(more);
        serve_all(bound, self.shutdown).await;
        // Calls still being answered record their events first (their connections outlive
        // the listeners), for at most AUDIT_DRAIN.
        self.audit.drain(AUDIT_DRAIN).await;
        self.audit.flush().await;
        Ok(())
    }
}

/// How long a stop waits for state-changing calls still being answered, so their audit
/// events are written to the store and not only to the log lines.
const AUDIT_DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Installs the TLS crypto provider and creates the data directory: what the demo clouds
/// and the services both need first.
fn prepare(cfg: &ServeConfig) -> anyhow::Result<()> {
    tls::install_crypto_provider();
    startup::ensure_data_dir(&cfg.storage.data_dir)?;
    Ok(())
}

fn grpc_routes<C: CredentialsService, T: ApiTokensService>(
    auth: BearerAuth,
    credentials: Option<CredentialsApi<C, T>>,
    provisioning: &crate::provisioning::Provisioning,
    audit: Arc<dyn AuditStore>,
) -> axum::Router {
    let (health_reporter, health) = tonic_health::server::health_reporter();
    let with_credentials = credentials.is_some();
    tokio::spawn(async move {
        health_reporter
            .set_serving::<ProvisionerServiceServer<ProvisionerGrpc>>()
            .await;
        if with_credentials {
            health_reporter
                .set_serving::<CredentialsServiceServer<C>>()
                .await;
        }
    });
    // Reflection in both versions: grpcurl and grpcui speak v1; Python's grpcio-reflection,
    // Evans and older grpcurl builds only v1alpha.
    let reflection = || {
        let builder = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(levelrail_proto::FILE_DESCRIPTOR_SET)
            .with_service_name("levelrail.provisioner.v1.ProvisionerService")
            .with_service_name("levelrail.nodes.v1.NodesService")
            .with_service_name("levelrail.audit.v1.AuditService");
        if with_credentials {
            builder
                .with_service_name("levelrail.credentials.v1.CredentialsService")
                .with_service_name("levelrail.auth.v1.ApiTokensService")
        } else {
            builder
        }
    };
    let nodes_svc = NodesGrpc::new(provisioning.nodes.clone())
        .with_orphans(provisioning.provisioner.orphans())
        .into_server()
        .max_decoding_message_size(crate::listener::DEFAULT_MAX_MESSAGE);
    let mut routes = tonic::service::Routes::new(health)
        .add_service(InterceptedService::new(nodes_svc, auth.clone()))
        .add_service(InterceptedService::new(
            AuditGrpc::new(audit).into_server(),
            auth.clone(),
        ))
        .add_service(InterceptedService::new(
            ProvisionerGrpc::new(provisioning.provisioner.clone())
                .into_server()
                .max_decoding_message_size(crate::listener::DEFAULT_MAX_MESSAGE),
            auth.clone(),
        ));
    if let Some(api) = credentials {
        routes = routes
            .add_service(InterceptedService::new(
                api.credentials
                    .max_decoding_message_size(CREDENTIALS_MAX_MESSAGE),
                auth.clone(),
            ))
            .add_service(InterceptedService::new(api.tokens, auth.clone()));
    }
    if let Ok(v1) = reflection().build_v1() {
        routes = routes.add_service(InterceptedService::new(v1, auth.clone()));
    }
    if let Ok(v1alpha) = reflection().build_v1alpha() {
        routes = routes.add_service(InterceptedService::new(v1alpha, auth));
    }
    routes.prepare().into_axum_router()
}

fn tls_config(
    cfg: &PublicArgs,
    sans: &[String],
    listen: SocketAddr,
    ca: &ControlPlaneCa,
) -> anyhow::Result<Option<Arc<rustls::ServerConfig>>> {
    if let (Some(cert), Some(key)) = (&cfg.tls_cert, &cfg.tls_key) {
        return Ok(Some(tls::from_files(cert, key)?));
    }
    if cfg.tls || !listen.ip().is_loopback() {
        return Ok(Some(tls::from_ca(ca, &server_hosts(sans, listen))?));
    }
    Ok(None)
}

/// Names for a CA-issued server certificate: loopback, the bound address and `--tls-san`.
fn server_hosts(sans: &[String], addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(sans.iter().cloned());
    hosts
}

/// The host of `host:port` or `[v6]:port`, without brackets.
fn host_of(addr: &str) -> &str {
    match addr.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(host, _)| host),
        None => addr.rsplit_once(':').map_or(addr, |(host, _)| host),
    }
}

/// `web/dist` of the workspace, when the binary runs from a checkout and it was built.
fn default_web_dir() -> Option<PathBuf> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../web/dist");
    here.join("index.html").exists().then_some(here)
}

/// Prints a newly created admin token once, to the operator's terminal (never to the log),
/// and with `save` also writes it to `admin.token` in `dir` (mode 0600).
pub(crate) fn show_admin_token(
    dir: &std::path::Path,
    token: &SecretString,
    save: bool,
) -> anyhow::Result<()> {
    let path = dir.join("admin.token");
    let mut out = std::io::stdout();
    if save {
        levelrail_provisioner::enroll::ca::write_private(
            &path,
            format!("{}\n", token.expose_secret()).as_bytes(),
        )?;
        let _ = writeln!(
            out,
            "Created the admin API token (saved to {}, mode 0600):\n  {}\nUse it with: export LEVELRAIL_TOKEN=$(cat {})",
            path.display(),
            token.expose_secret(),
            path.display()
        );
    } else {
        let _ = writeln!(
            out,
            "Created the admin API token. It is shown only this once and saved nowhere \
             (start with --write-admin-token to save it to {}):\n  {}",
            path.display(),
            token.expose_secret(),
        );
    }
    Ok(())
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// `levelrail rotate-master-key`: the same rotation as `levelrail-credentials`, of the
/// keyring file `master.key`. Refused where there is none (keys from the environment
/// rotate by a restart with `LEVELRAIL_MASTER_KEY_PREVIOUS`), instead of creating one.
pub async fn rotate_master_key(cfg: crate::config::RotateConfig) -> anyhow::Result<()> {
    let keyring = cfg.storage.data_dir.join("master.key");
    anyhow::ensure!(
        keyring.exists(),
        "no keyring file {}: this command rotates it. Where the master key comes from \
         LEVELRAIL_MASTER_KEY (or --master-key-file), rotate it by restarting the service with \
         the new key there and the old one in LEVELRAIL_MASTER_KEY_PREVIOUS",
        keyring.display()
    );
    let database_url = cfg.storage.database_url()?;
    let credentials = startup::open(
        StorageConfig {
            data_dir: &cfg.storage.data_dir,
            database_url: database_url.as_ref(),
            master_key: None,
        },
        Verifier::none(),
        Arc::new(levelrail_credentials::broker::GrantIssuers::default()),
    )
    .await?;
    let r = credentials.rotate_master_key().await?;
    println!(
        "master key rotated: primary {}, {} data keys re-wrapped, retired {:?}",
        r.primary, r.rewrapped, r.retired
    );
    Ok(())
}

#[cfg(test)]
mod rotate_tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Args {
        #[command(flatten)]
        rotate: crate::config::RotateConfig,
    }

    #[tokio::test]
    async fn rotating_where_there_is_no_keyring_file_is_refused_and_creates_none() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_str().expect("utf-8").to_owned();
        let args = Args::try_parse_from(["rotate", "--data-dir", &dir]).expect("args");
        let err = rotate_master_key(args.rotate).await.expect_err("refused");
        assert!(
            err.to_string().contains("LEVELRAIL_MASTER_KEY_PREVIOUS"),
            "{err}"
        );
        assert!(!tmp.path().join("master.key").exists());
    }
}
