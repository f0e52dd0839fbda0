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
use levelrail_credentials::grpc::CredentialsGrpc;
use levelrail_credentials::grpc::auth::BearerAuth;
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_proto::credentials::v1::credentials_service_server::CredentialsServiceServer;
use levelrail_provisioner::app::Nodes;
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::grpc::{NodesGrpc, ProvisionerGrpc};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;
use tracing::info;

use crate::config::ServeConfig;
use crate::listener::{self, CREDENTIALS_MAX_MESSAGE};
use crate::tls;

/// A built, bound, not yet serving control plane.
#[derive(Debug)]
pub struct App {
    listener: TcpListener,
    local_addr: SocketAddr,
    router: axum::Router,
    agent_listener: TcpListener,
    agent_addr: SocketAddr,
    agent_router: axum::Router,
    agent_tls: Arc<rustls::ServerConfig>,
    nodes: Arc<Nodes>,
    provisioning: crate::provisioning::Provisioning,
    registry: Arc<ProviderRegistry>,
    #[cfg(feature = "demo")]
    demo: Option<Demo>,
    tls: Option<Arc<rustls::ServerConfig>>,
    credentials: Credentials,
    ca: Arc<ControlPlaneCa>,
    admin_token: Option<SecretString>,
    shutdown: watch::Sender<bool>,
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
                Some(Demo::start(&cfg.data_dir, boot, settings).await?)
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
        let (ca, created) = ControlPlaneCa::load_or_create(&cfg.data_dir)?;
        if created {
            info!(fingerprint = %ca.fingerprint(), "created the control-plane CA");
        }
        let ca = Arc::new(ca);
        // Bound first: the agent address goes into every provision's user-data.
        let agent_listener = TcpListener::bind(cfg.agent_listen)
            .await
            .with_context(|| format!("binding the agent listener {}", cfg.agent_listen))?;
        let agent_addr = agent_listener.local_addr()?;
        #[cfg(feature = "demo")]
        let settings = match &demo {
            Some(d) => d.settings.clone(),
            None => crate::providers::configured(&cfg)?,
        };
        #[cfg(not(feature = "demo"))]
        let settings = crate::providers::configured(&cfg)?;
        let issuers = crate::providers::issuers(&settings)?;
        let clients = Arc::new(levelrail_clouds::clients(&settings));
        let issuers = Arc::new(issuers);
        let credentials = startup::open(
            StorageConfig {
                data_dir: &cfg.data_dir,
                database_url: cfg.database_url.as_ref(),
                master_key: cfg.master_key.as_ref(),
            },
            Verifier::new(clients.clone(), issuers.clone()),
            issuers,
        )
        .await?;
        let registry = Arc::new(ProviderRegistry::new(
            Arc::new(InProcessBroker::new(credentials.clone())),
            clients,
        ));
        #[cfg(feature = "demo")]
        if let Some(d) = &demo {
            d.connect(&credentials).await?;
            if cfg.demo_stray_server {
                let id = crate::provisioning::control_plane_id(&cfg.data_dir)?;
                d.plant_stray_server(&registry, &id).await?;
            }
        }
        let admin_token = credentials.bootstrap_api_tokens().await?;
        if let Some(token) = &admin_token {
            write_admin_token(&cfg.data_dir, token)?;
        }
        let binaries = AgentBinaries::load(&cfg.agent_binaries)?;
        let provisioning =
            crate::provisioning::build(&cfg, ca.clone(), registry.clone(), agent_addr, &binaries)
                .await?;
        let nodes = provisioning.nodes.clone();
        let grpc = grpc_routes(&credentials, &nodes, &provisioning.provisioner);
        let web_dir = cfg.web_dir.clone().or_else(default_web_dir);
        let router = listener::assemble(
            grpc,
            web_dir,
            &cfg.allowed_origins,
            cfg.max_concurrent_requests,
        )?;
        let tls = tls_config(&cfg, &ca)?;
        let listener = TcpListener::bind(cfg.listen)
            .await
            .with_context(|| format!("binding the public listener {}", cfg.listen))?;
        let local_addr = listener.local_addr()?;
        let mut agent_hosts = server_hosts(&cfg, cfg.agent_listen);
        // curl on the node checks the advertised host against the certificate.
        let advertised_host = host_of(&provisioning.advertised);
        if !agent_hosts.iter().any(|h| h == advertised_host) {
            agent_hosts.push(advertised_host.to_owned());
        }
        let agent_tls = crate::agent::tls(&ca, &agent_hosts)?;
        let agent_router = crate::agent::router(nodes.clone()).merge(binaries.router());
        let (shutdown, _) = watch::channel(false);
        Ok(Self {
            listener,
            local_addr,
            router,
            agent_listener,
            agent_addr,
            agent_router,
            agent_tls,
            nodes,
            provisioning,
            registry,
            #[cfg(feature = "demo")]
            demo,
            tls,
            credentials,
            ca,
            admin_token,
            shutdown,
        })
    }

    /// The bound public address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bound agent listener address.
    pub fn agent_addr(&self) -> SocketAddr {
        self.agent_addr
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
        &self.provisioning.provisioner
    }

    /// The node registry.
    pub fn nodes(&self) -> &Arc<Nodes> {
        &self.nodes
    }

    /// Whether the public listener speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
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
        &self.ca
    }

    /// A handle that stops the server when sent `true`.
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.shutdown.clone()
    }

    /// Serves until stopped (Ctrl-C, SIGTERM, or the stopper).
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let rx = self.shutdown.subscribe();
        let stop = self.shutdown.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        });
        info!(addr = %self.local_addr, tls = self.tls.is_some(), "public listener ready");
        info!(addr = %self.agent_addr, fingerprint = %self.ca.fingerprint(), "agent listener ready");
        let agent = tokio::spawn(listener::serve(
            self.agent_listener,
            self.agent_router,
            Some(self.agent_tls),
            rx.clone(),
        ));
        listener::serve(self.listener, self.router, self.tls, rx).await;
        let _ = agent.await;
        Ok(())
    }
}

/// Installs the TLS crypto provider and creates the data directory: what the demo clouds
/// and the services both need first.
fn prepare(cfg: &ServeConfig) -> anyhow::Result<()> {
    tls::install_crypto_provider();
    startup::ensure_data_dir(&cfg.data_dir)?;
    Ok(())
}

fn grpc_routes(
    credentials: &Credentials,
    nodes: &Arc<Nodes>,
    provisioner: &Arc<levelrail_provisioner::app::Provisioner>,
) -> axum::Router {
    let auth = BearerAuth::new(credentials.api_tokens().clone());
    let creds = CredentialsServiceServer::new(CredentialsGrpc::new(credentials.clone()))
        .max_decoding_message_size(CREDENTIALS_MAX_MESSAGE);
    let (health_reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        health_reporter
            .set_serving::<CredentialsServiceServer<CredentialsGrpc>>()
            .await;
    });
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(levelrail_proto::FILE_DESCRIPTOR_SET)
        .with_service_name("levelrail.credentials.v1.CredentialsService")
        .with_service_name("levelrail.provisioner.v1.ProvisionerService")
        .with_service_name("levelrail.nodes.v1.NodesService")
        .build_v1();
    let nodes_svc = NodesGrpc::new(nodes.clone())
        .with_orphans(provisioner.orphans())
        .into_server()
        .max_decoding_message_size(crate::listener::DEFAULT_MAX_MESSAGE);
    let mut routes = tonic::service::Routes::new(health)
        .add_service(InterceptedService::new(creds, auth.clone()))
        .add_service(InterceptedService::new(nodes_svc, auth.clone()))
        .add_service(InterceptedService::new(
            ProvisionerGrpc::new(provisioner.clone())
                .into_server()
                .max_decoding_message_size(crate::listener::DEFAULT_MAX_MESSAGE),
            auth.clone(),
        ));
    if let Ok(reflection) = reflection {
        routes = routes.add_service(InterceptedService::new(reflection, auth));
    }
    routes.prepare().into_axum_router()
}

fn tls_config(
    cfg: &ServeConfig,
    ca: &ControlPlaneCa,
) -> anyhow::Result<Option<Arc<rustls::ServerConfig>>> {
    if let (Some(cert), Some(key)) = (&cfg.tls_cert, &cfg.tls_key) {
        return Ok(Some(tls::from_files(cert, key)?));
    }
    if cfg.tls || !cfg.listen.ip().is_loopback() {
        return Ok(Some(tls::from_ca(ca, &server_hosts(cfg, cfg.listen))?));
    }
    Ok(None)
}

/// Names for a CA-issued server certificate: loopback, the bound address and `--tls-san`.
fn server_hosts(cfg: &ServeConfig, addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(cfg.tls_sans.iter().cloned());
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

fn write_admin_token(dir: &std::path::Path, token: &SecretString) -> anyhow::Result<()> {
    let path = dir.join("admin.token");
    levelrail_provisioner::enroll::ca::write_private(
        &path,
        format!("{}\n", token.expose_secret()).as_bytes(),
    )?;
    // Printed once, to the operator's terminal, never to the log.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "Created the admin API token (saved to {}, mode 0600):\n  {}\nUse it with: export LEVELRAIL_TOKEN=$(cat {})",
        path.display(),
        token.expose_secret(),
        path.display()
    );
    Ok(())
}

async fn shutdown_signal() {
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

/// `levelrail rotate-master-key`: the same rotation as `levelrail-credentials`.
pub async fn rotate_master_key(cfg: crate::config::RotateConfig) -> anyhow::Result<()> {
    let credentials = startup::open(
        StorageConfig {
            data_dir: &cfg.data_dir,
            database_url: cfg.database_url.as_ref(),
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
