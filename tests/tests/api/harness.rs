//! Starting the control plane for tests: in-process through `App::build` (port 0, fresh
//! data directory), or the real `levelrail` binary as a child process.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use levelrail::config::{
    CloudArgs, CloudEndpoints, FrontArgs, NodeArgs, PublicArgs, ServeConfig, StorageArgs,
};
use levelrail_clouds::ProviderId;
use levelrail_credentials::app::Credentials;
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use tokio::sync::watch;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// A `ServeConfig` for tests: loopback, port 0, plaintext, no web bundle.
pub(crate) fn test_config(data_dir: &Path) -> ServeConfig {
    ServeConfig {
        storage: StorageArgs {
            data_dir: data_dir.to_owned(),
            database_url: None,
            database_url_file: None,
        },
        front: FrontArgs {
            listen: "127.0.0.1:0".parse().expect("literal address"),
            public: PublicArgs {
                tls_cert: None,
                tls_key: None,
                tls: false,
                allowed_origins: vec!["https://console.example.test".into()],
                max_concurrent_requests: 512,
                // The benchmarks call far past any one token's fair share.
                token_rate_limit: 0,
            },
            tls_sans: vec![],
            web_dir: None,
            nodes: NodeArgs {
                agent_listen: "127.0.0.1:0".parse().expect("literal address"),
                agent_advertise: None,
                // The nodes of these tests boot on this machine.
                allow_loopback_agent_advertise: true,
                agent_binaries: vec![bin("levelrail-agent")],
                agent_image: None,
                provision_timeout: None,
                sweep_unknown_servers: false,
                lease_ttl: "30s".into(),
                max_provisions_in_flight: 10_000,
            },
        },
        clouds: CloudArgs {
            cloud_endpoints: CloudEndpoints {
                urls: vec![
                    (ProviderId::Hetzner, "api", "http://127.0.0.1:9/v1".into()),
                    (
                        ProviderId::DigitalOcean,
                        "api",
                        "http://127.0.0.1:9/v2".into(),
                    ),
                    (ProviderId::Aws, "ec2", "http://127.0.0.1:9".into()),
                    (ProviderId::Aws, "sts", "http://127.0.0.1:9".into()),
                ],
            },
            cloud_ca_file: None,
            allow_ambient_aws: false,
            token_file_dir: None,
            aws_subnets: vec![],
        },
        master_key: None,
        write_admin_token: true,
        demo: false,
        demo_token_lifetime: None,
        demo_stray_server: false,
        demo_full_regions: vec![],
        demo_fleet: None,
    }
}

/// Points `cfg`'s `id` client at `url` (its endpoint `key`).
pub(crate) fn set_endpoint(cfg: &mut ServeConfig, id: ProviderId, key: &'static str, url: String) {
    let urls = &mut cfg.clouds.cloud_endpoints.urls;
    urls.retain(|(i, k, _)| (*i, *k) != (id, key));
    urls.push((id, key, url));
}

/// An in-process control plane.
#[derive(Debug)]
pub(crate) struct TestApp {
    /// Public listener address.
    pub(crate) addr: SocketAddr,
    /// The admin API token.
    pub(crate) token: String,
    /// The node registry, for direct inspection.
    #[allow(dead_code)]
    pub(crate) nodes: std::sync::Arc<levelrail_provisioner::app::Nodes>,
    /// The agent listener.
    #[allow(dead_code)]
    pub(crate) agent_addr: SocketAddr,
    /// The credentials service, for direct inspection.
    pub(crate) credentials: Credentials,
    /// The provider clients (what exists at a demo cloud, as its API lists it).
    #[allow(dead_code)]
    pub(crate) registry: std::sync::Arc<levelrail_clouds::registry::ProviderRegistry>,
    /// The data directory.
    #[allow(dead_code)]
    pub(crate) data_dir: std::path::PathBuf,
    stop: watch::Sender<bool>,
    join: tokio::task::JoinHandle<()>,
}

impl TestApp {
    /// Starts a control plane on `cfg`.
    pub(crate) async fn start(cfg: ServeConfig) -> anyhow::Result<Self> {
        Self::start_with_boot(cfg, None).await
    }

    /// Starts a control plane on `cfg` whose demo clouds boot servers through `boot`.
    pub(crate) async fn start_with_boot(
        cfg: ServeConfig,
        boot: Option<levelrail_sim::fakes::BootHook>,
    ) -> anyhow::Result<Self> {
        let data_dir = cfg.storage.data_dir.clone();
        let app = levelrail::App::build_with_boot(cfg, boot).await?;
        let token = match app.admin_token() {
            Some(t) => secrecy::ExposeSecret::expose_secret(t).to_owned(),
            None => std::fs::read_to_string(data_dir.join("admin.token"))?
                .trim()
                .to_owned(),
        };
        let addr = app.local_addr();
        let credentials = app.credentials().clone();
        let registry = app.registry().clone();
        let nodes = app.nodes().clone();
        let agent_addr = app.agent_addr();
        let stop = app.stopper();
        let join = tokio::spawn(async move {
            let _ = app.run_until_stopped().await;
        });
        Ok(Self {
            addr,
            token,
            nodes,
            agent_addr,
            credentials,
            registry,
            data_dir,
            stop,
            join,
        })
    }

    /// Starts a control plane with a fresh data directory inside `tmp`.
    pub(crate) async fn spawn(tmp: &Path) -> Self {
        Self::start(test_config(tmp))
            .await
            .expect("control plane starts")
    }

    /// Stops it and waits until the listener is closed.
    pub(crate) async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.join.await;
    }

    /// `http://addr`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A channel to the public listener.
    pub(crate) async fn channel(&self) -> Channel {
        Endpoint::from_shared(self.url())
            .expect("url")
            .connect()
            .await
            .expect("connects")
    }

    /// A provisioner client authenticated with the admin token.
    #[allow(dead_code)]
    pub(crate) async fn provisioner_client(&self) -> ProvisionerClient {
        ProvisionerServiceClient::with_interceptor(self.channel().await, Bearer(self.token.clone()))
    }

    /// Asks for a node `name` of `size` in `region` and returns the provision's id.
    #[allow(dead_code)]
    pub(crate) async fn provision(
        &self,
        provider: levelrail_proto::credentials::v1::Provider,
        region: &str,
        size: &str,
        name: &str,
    ) -> String {
        self.start_provision(levelrail_proto::provisioner::v1::ProvisionRequest {
            provider: provider as i32,
            region: region.into(),
            size: size.into(),
            name: name.into(),
            ..Default::default()
        })
        .await
    }

    /// A credentials client authenticated with `token`.
    pub(crate) async fn credentials_client_with(
        &self,
        token: &str,
    ) -> CredentialsServiceClient<InterceptedService<Channel, Bearer>> {
        CredentialsServiceClient::with_interceptor(self.channel().await, Bearer(token.to_owned()))
    }

    /// Starts `request` as the admin; the provision's id (panics naming `request.name`).
    #[allow(dead_code)]
    pub(crate) async fn start_provision(
        &self,
        request: levelrail_proto::provisioner::v1::ProvisionRequest,
    ) -> String {
        let name = request.name.clone();
        self.provisioner_client()
            .await
            .provision(request)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .into_inner()
            .provision
            .unwrap_or_else(|| panic!("{name}: no provision in the answer"))
            .id
    }

    /// A credentials client authenticated with the admin token.
    pub(crate) async fn credentials_client(
        &self,
    ) -> CredentialsServiceClient<InterceptedService<Channel, Bearer>> {
        self.credentials_client_with(&self.token).await
    }
}

/// The provisioner API as the admin.
pub(crate) type ProvisionerClient = ProvisionerServiceClient<InterceptedService<Channel, Bearer>>;

/// Adds `authorization: Bearer …` to every request.
#[derive(Debug, Clone)]
pub(crate) struct Bearer(pub(crate) String);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if !self.0.is_empty() {
            let v: MetadataValue<_> = format!("Bearer {}", self.0)
                .parse()
                .map_err(|_| Status::internal("bad token"))?;
            req.metadata_mut().insert("authorization", v);
        }
        Ok(req)
    }
}

/// Path of a binary in the target directory of this test, if it is there.
#[allow(dead_code)]
pub(crate) fn optional_bin(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join(name);
    path.is_file().then_some(path)
}

/// Path of a workspace binary built into the same target directory as this test.
pub(crate) fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// A free loopback port (bound and released).
pub(crate) fn free_port() -> u16 {
    free_port_on("127.0.0.1")
}

/// A free port on `ip` (bound and released).
pub(crate) fn free_port_on(ip: &str) -> u16 {
    std::net::TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Polls provision `id` until it is `ready` or `failed`; panics naming `name` after
/// `within`.
#[allow(dead_code)]
pub(crate) async fn wait_finished<S>(
    client: &mut levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient<S>,
    id: &str,
    name: &str,
    within: std::time::Duration,
) -> levelrail_proto::provisioner::v1::Provision
where
    S: tonic::client::GrpcService<tonic::body::Body>,
    S::Error: Into<tonic::codegen::StdError>,
    S::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <S::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    use levelrail_proto::provisioner::v1 as ppb;
    let deadline = std::time::Instant::now() + within;
    loop {
        let p = client
            .get_provision(ppb::GetProvisionRequest { id: id.to_owned() })
            .await
            .unwrap()
            .into_inner()
            .provision
            .unwrap();
        let status = ppb::ProvisionStatus::try_from(p.status).unwrap();
        if matches!(
            status,
            ppb::ProvisionStatus::Ready | ppb::ProvisionStatus::Failed
        ) {
            return p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never finished: {p:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The real `levelrail serve` binary as a child process, logs captured in a file.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    /// Public address.
    pub(crate) addr: SocketAddr,
    /// Agent listener address.
    pub(crate) agent_addr: SocketAddr,
    /// Where stderr (the log) goes.
    pub(crate) log_path: PathBuf,
    /// Data directory.
    pub(crate) data_dir: PathBuf,
}

impl ServerProcess {
    /// Starts `levelrail serve` with `extra` arguments and `LEVELRAIL_LOG=log_filter`. A free
    /// port can be taken by a parallel test between choosing and binding it: a server that
    /// exits before it is ready is started again on other ports.
    pub(crate) fn start(data_dir: &Path, log_filter: &str, extra: &[&str]) -> Self {
        for _ in 0..3 {
            if let Some(server) = Self::try_start(data_dir, log_filter, extra) {
                return server;
            }
        }
        panic!(
            "levelrail exited before it was ready three times; see its log beside {}",
            data_dir.display()
        );
    }

    fn try_start(data_dir: &Path, log_filter: &str, extra: &[&str]) -> Option<Self> {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
        let agent_addr: SocketAddr = format!("127.0.0.1:{}", free_port())
            .parse()
            .expect("address");
        let log_path = data_dir.with_extension("log");
        // Appended to: a restart (the crash test's) keeps the log of the run before it.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("log file");
        let stdout_log = log.try_clone().expect("log file");
        let first_start = !data_dir.join("admin.token").exists();
        let mut child = Command::new(bin("levelrail"))
            .args(["serve", "--write-admin-token"])
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--agent-listen")
            .arg(agent_addr.to_string())
            .args(extra)
            .env("LEVELRAIL_LOG", log_filter)
            .env_remove("DATABASE_URL")
            .env_remove("LEVELRAIL_MASTER_KEY")
            .stdin(Stdio::null())
            .stdout(stdout_log)
            .stderr(log)
            .spawn()
            .expect("levelrail starts");
        let started = Instant::now();
        // Ready: listening, and on a first start the admin token is written (before the
        // listener opens, so a listener without it is another test's).
        while std::net::TcpStream::connect(addr).is_err()
            || (first_start && !data_dir.join("admin.token").exists())
        {
            if child.try_wait().ok().flatten().is_some() {
                return None;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "levelrail did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Self {
            child,
            addr,
            agent_addr,
            log_path,
            data_dir: data_dir.to_owned(),
        })
    }

    /// The admin token written on first start.
    pub(crate) fn admin_token(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("admin.token"))
            .expect("admin.token")
            .trim()
            .to_owned()
    }

    /// `http://addr`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Kills the process (`SIGKILL`: no shutdown of any kind) and waits for it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the process with SIGTERM and waits for it.
    pub(crate) fn stop(mut self) -> std::io::Result<()> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        self.child.wait().map(|_| ())
    }
}

impl Drop for ServerProcess {
    /// SIGTERM first, so the server stops the processes it started (demo agents), then
    /// SIGKILL if it does not exit in time.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
