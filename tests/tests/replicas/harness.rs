//! A split deployment of real processes for the crash tests: one `levelrail-credentials
//! serve` and two `levelrail-provisioner serve` replicas on a fresh pair of PostgreSQL
//! databases, with the internal PKI from `levelrail pki init`, a fake Hetzner (in this
//! process) whose servers boot by executing their user-data, and a TCP balancer in front of
//! the replicas' agent listeners (the address every VM dials, as a load balancer would be
//! in a real deployment), so a node enrolls whichever replica is alive.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{ApiToken, Provider, SetCredentialRequest};
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::boot::{BootHarness, BootOptions};
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig, FakeHetznerHandle};
use sqlx::Connection as _;
use tokio::net::{TcpListener, TcpStream};
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// The fake Hetzner's token (Hetzner's shape: 64 alphanumerics).
const TOKEN: &str = "replicas000000000000000000000000000000000000000000000000000000ht";
/// How long a replica's lease lasts: short, so a dead replica's provisions move quickly.
pub(crate) const LEASE_TTL: &str = "2s";

/// The PostgreSQL server of the tests, if one is configured.
pub(crate) fn postgres_url() -> Option<String> {
    let url = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL")?;
    Some(
        url.into_string()
            .expect("LEVELRAIL_TEST_POSTGRES_URL is UTF-8"),
    )
}

/// `url` with its database replaced by `name`.
fn database_url(url: &str, name: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a database URL with a path");
    format!("{base}/{name}")
}

/// A binary of this workspace's target directory.
pub(crate) fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir")
        .join(name);
    assert!(
        path.exists(),
        "{} is not built; run `cargo test --workspace`",
        path.display()
    );
    path
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// A child process, its log in a file; killed with SIGKILL when dropped.
#[derive(Debug)]
pub(crate) struct Proc {
    pub(crate) name: String,
    child: Child,
    log: PathBuf,
    /// The public listener.
    pub(crate) addr: SocketAddr,
}

impl Proc {
    fn spawn(name: &str, dir: &Path, mut cmd: Command, addr: SocketAddr) -> Self {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let child = cmd
            .env(
                "LEVELRAIL_LOG",
                "info,levelrail=debug,levelrail_provisioner=debug",
            )
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        let mut p = Self {
            name: name.to_owned(),
            child,
            log,
            addr,
        };
        p.wait_listening();
        p
    }

    fn wait_listening(&mut self) {
        let started = Instant::now();
        while std::net::TcpStream::connect(self.addr).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited ({status}) before listening:\n{}",
                    self.name,
                    self.log_text()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{} did not listen on {}:\n{}",
                self.name,
                self.addr,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`).
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {}", self.name);
    }

    /// SIGKILL, and waits until it is gone.
    pub(crate) fn kill(&mut self) {
        self.signal("KILL");
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bearer token in every request.
#[derive(Debug, Clone)]
pub(crate) struct Bearer(String);

impl Bearer {
    pub(crate) fn new(token: &str) -> Self {
        Self(token.to_owned())
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        let v: MetadataValue<_> = format!("Bearer {}", self.0)
            .parse()
            .map_err(|_| Status::internal("bad token"))?;
        req.metadata_mut().insert("authorization", v);
        Ok(req)
    }
}

pub(crate) type Provisioner = ProvisionerServiceClient<InterceptedService<Channel, Bearer>>;

/// The deployment.
pub(crate) struct Cluster {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) credentials: Proc,
    /// Replica A, replica B.
    pub(crate) replicas: Vec<Proc>,
    pub(crate) hetzner: FakeHetznerHandle,
    pub(crate) token: String,
    credentials_args: Vec<String>,
    credentials_db: String,
    admin_url: String,
    databases: Vec<String>,
    _boot: Arc<BootHarness>,
    _balancer: tokio::task::JoinHandle<()>,
}

impl Cluster {
    /// Starts everything; `None` (the test is skipped) without a PostgreSQL server.
    pub(crate) async fn start(name: &str) -> Option<Self> {
        let Some(admin_url) = postgres_url() else {
            eprintln!("skipping {name}: LEVELRAIL_TEST_POSTGRES_URL unset");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let suffix = uuid_suffix();
        let databases = vec![
            format!("lr_{name}_c_{suffix}"),
            format!("lr_{name}_p_{suffix}"),
        ];
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("PostgreSQL answers");
        for db in &databases {
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{db}\"")))
                .execute(&mut admin)
                .await
                .expect("create database");
        }
        let credentials_db = database_url(&admin_url, &databases[0]);
        let provisioner_db = database_url(&admin_url, &databases[1]);

        let pki = dir.path().join("pki");
        let status = Command::new(bin("levelrail"))
            .args(["pki", "init", "--dir"])
            .arg(&pki)
            .stdout(Stdio::null())
            .status()
            .expect("levelrail pki init runs");
        assert!(status.success(), "levelrail pki init");
        // Every replica is given the same sealing key, as from one Secret.
        let seal = dir.path().join("seal.key");
        levelrail_provisioner::enroll::sealing_key::load_or_create(&seal).expect("sealing key");

        let boot = BootHarness::new(dir.path().join("nodes"), BootOptions::default());
        let hetzner = FakeHetzner::start(FakeHetznerConfig {
            token: TOKEN.into(),
            boot_hook: Some(boot.hook()),
            state_step: Duration::from_secs(1),
            ..Default::default()
        })
        .await
        .expect("fake Hetzner");

        let broker = free_addr();
        let public = free_addr();
        let credentials_args: Vec<String> = vec![
            "serve".into(),
            "--write-admin-token".into(),
            "--data-dir".into(),
            dir.path().join("credentials").display().to_string(),
            "--listen".into(),
            public.to_string(),
            "--broker-listen".into(),
            broker.to_string(),
            "--internal-ca".into(),
            pki.join("internal-ca.pem").display().to_string(),
            "--internal-cert".into(),
            pki.join("credentials.pem").display().to_string(),
            "--internal-key".into(),
            pki.join("credentials.key").display().to_string(),
            "--hetzner-api-url".into(),
            hetzner.base_url(),
        ];
        let credentials = spawn_credentials(dir.path(), &credentials_args, &credentials_db, public);
        let token = std::fs::read_to_string(dir.path().join("credentials/admin.token"))
            .expect("admin token")
            .trim()
            .to_owned();

        // The address every VM dials: whichever replica's agent listener answers.
        let balancer = TcpListener::bind("127.0.0.1:0").await.expect("balancer");
        let advertised = balancer.local_addr().expect("balancer address");
        let agent_addrs = [free_addr(), free_addr()];
        // Replica B first: a stopped (not killed) A still accepts connections it never
        // answers, and the stale-writer test stops A.
        let balancer_task = tokio::spawn(balance(balancer, vec![agent_addrs[1], agent_addrs[0]]));

        let mut replicas = Vec::new();
        for (i, agent) in agent_addrs.iter().enumerate() {
            let name = ["replica-a", "replica-b"][i];
            let public = free_addr();
            let mut cmd = Command::new(bin("levelrail-provisioner"));
            cmd.arg("serve")
                .arg("--data-dir")
                .arg(dir.path().join(name))
                .args(["--listen", &public.to_string()])
                .args(["--agent-listen", &agent.to_string()])
                .args(["--agent-advertise", &advertised.to_string()])
                .arg("--allow-loopback-agent-advertise")
                .arg("--agent-binary")
                .arg(bin("levelrail-agent"))
                .args(["--credentials-url", &format!("https://{broker}")])
                .arg("--internal-ca")
                .arg(pki.join("internal-ca.pem"))
                .arg("--internal-cert")
                .arg(pki.join("provisioner.pem"))
                .arg("--internal-key")
                .arg(pki.join("provisioner.key"))
                .arg("--sealing-key-file")
                .arg(&seal)
                .args(["--hetzner-api-url", &hetzner.base_url()])
                .args(["--lease-ttl", LEASE_TTL])
                .env("DATABASE_URL", &provisioner_db)
                .env_remove("LEVELRAIL_MASTER_KEY");
            replicas.push(Proc::spawn(name, dir.path(), cmd, public));
        }
        let cluster = Self {
            dir,
            credentials,
            replicas,
            hetzner,
            token,
            credentials_args,
            credentials_db,
            admin_url,
            databases,
            _boot: boot,
            _balancer: balancer_task,
        };
        cluster.store_credential().await;
        Some(cluster)
    }

    /// Stores the fake Hetzner's token through replica A (forwarded to the credentials
    /// service), once A knows the admin token.
    pub(crate) async fn store_credential(&self) {
        let mut client = CredentialsServiceClient::with_interceptor(
            channel(self.replicas[0].addr).await,
            Bearer(self.token.clone()),
        );
        let request = SetCredentialRequest {
            provider: Provider::Hetzner as i32,
            credential: Some(Credential::ApiToken(ApiToken {
                token: TOKEN.into(),
            })),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match client.set_credential(request.clone()).await {
                Ok(_) => return,
                // Until A has the admin token from the credentials service's change stream.
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!(
                    "the credential could not be stored through replica A: {e}\n{}",
                    self.replicas[0].log_text()
                ),
            }
        }
    }

    /// A provisioner client of replica `i`.
    pub(crate) async fn provisioner(&self, i: usize) -> Provisioner {
        ProvisionerServiceClient::with_interceptor(
            channel(self.replicas[i].addr).await,
            Bearer(self.token.clone()),
        )
    }

    /// Starts provision `name` through replica `i`; its id.
    pub(crate) async fn provision(&self, i: usize, name: &str) -> String {
        self.provisioner(i)
            .await
            .provision(ppb::ProvisionRequest {
                provider: Provider::Hetzner as i32,
                region: "fsn1".into(),
                size: "cx22".into(),
                name: name.into(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("provision {name}: {e}\n{}", self.replicas[i].log_text()))
            .into_inner()
            .provision
            .expect("a provision")
            .id
    }

    /// Provision `id` as replica `i` reports it.
    pub(crate) async fn get(&self, i: usize, id: &str) -> ppb::Provision {
        self.provisioner(i)
            .await
            .get_provision(ppb::GetProvisionRequest { id: id.into() })
            .await
            .expect("get provision")
            .into_inner()
            .provision
            .expect("a provision")
    }

    /// Waits until replica `i` reports `id` past `pred`; panics with every log after
    /// `within`.
    pub(crate) async fn wait_until(
        &self,
        i: usize,
        id: &str,
        within: Duration,
        what: &str,
        pred: impl Fn(&ppb::Provision) -> bool,
    ) -> ppb::Provision {
        let deadline = Instant::now() + within;
        loop {
            let p = self.get(i, id).await;
            if pred(&p) {
                return p;
            }
            if Instant::now() > deadline {
                panic!("{what}: never reached; last {p:?}\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every process's log, for a failure message.
    pub(crate) fn logs(&self) -> String {
        let mut out = format!("--- credentials ---\n{}", self.credentials.log_text());
        for r in &self.replicas {
            out.push_str(&format!("\n--- {} ---\n{}", r.name, r.log_text()));
        }
        out
    }

    /// The servers at the fake that carry `id`'s label.
    pub(crate) fn servers_of(&self, id: &str) -> usize {
        self.hetzner
            .servers()
            .iter()
            .filter(|s| s.labels.values().any(|v| v == id))
            .count()
    }

    /// Starts the credentials service again (after a kill), on the same addresses.
    pub(crate) fn restart_credentials(&mut self) {
        let addr = self.credentials.addr;
        self.credentials = spawn_credentials(
            self.dir.path(),
            &self.credentials_args,
            &self.credentials_db,
            addr,
        );
    }

    /// Stops every process and drops the databases.
    pub(crate) async fn finish(self) {
        let Cluster {
            credentials,
            replicas,
            admin_url,
            databases,
            ..
        } = self;
        drop(replicas);
        drop(credentials);
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("PostgreSQL answers");
        for db in databases {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"
            )))
            .execute(&mut admin)
            .await;
        }
    }
}

fn spawn_credentials(dir: &Path, args: &[String], db: &str, public: SocketAddr) -> Proc {
    let mut cmd = Command::new(bin("levelrail-credentials"));
    cmd.args(args)
        .env("DATABASE_URL", db)
        .env_remove("LEVELRAIL_MASTER_KEY");
    Proc::spawn("credentials", dir, cmd, public)
}

/// A channel to `addr`'s public listener.
pub(crate) async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("url")
        .connect()
        .await
        .expect("connects")
}

/// Forwards each connection to the first of `backends` that accepts it.
async fn balance(listener: TcpListener, backends: Vec<SocketAddr>) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        let backends = backends.clone();
        tokio::spawn(async move {
            for backend in backends {
                if let Ok(mut outbound) = TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    return;
                }
            }
        });
    }
}

fn uuid_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", nanos & 0xffff_ffff, std::process::id())
}
