//! The `levelrail serve` process as an operator runs it, measured from outside (this bench
//! is only its client): cold start to healthy, idle RSS, and the server's memory per open
//! `WatchProvision` stream at 10,000 streams, each next to its floor measured in the same
//! run. Needs the release binaries (`cargo build --release --workspace --bins`; `scripts/bench`
//! builds them). Run with `cargo bench --workspace --bench serve`.
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use levelrail_proto::credentials::v1 as cpb;
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig};
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

const TOKEN: &str = "benchtoken00000000000000000000000000000000000000000000000000000000";
const STREAMS: usize = 10_000;
/// The listener admits 100 streams per connection.
const CONNECTIONS: usize = 100;
const IDLE_RSS_TARGET_MB: f64 = 50.0;
const COLD_START_TARGET_MS: f64 = 500.0;
const STREAM_TARGET_KIB: f64 = 10.0;

struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn pid(&self) -> String {
        self.child.id().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `levelrail serve` on `data_dir` and returns it with the time from exec to the
/// first `SERVING` health answer.
async fn start(data_dir: &Path, hetzner_url: &str) -> (Server, Duration) {
    let (port, agent_port) = (harness::free_port(), harness::free_port());
    let log = std::fs::File::create(data_dir.with_extension("log")).expect("log file");
    let started = Instant::now();
    let child = Command::new(harness::bin("levelrail"))
        .args(["serve", "--write-admin-token", "--data-dir"])
        .arg(data_dir)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--agent-listen", &format!("127.0.0.1:{agent_port}")])
        .args([
            "--allow-loopback-agent-advertise",
            "--hetzner-api-url",
            hetzner_url,
            // 10,000 watch streams from one token: the server's capacity, not its fairness.
            "--token-rate-limit",
            "0",
        ])
        .env("LEVELRAIL_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("levelrail starts");
    let url = format!("http://127.0.0.1:{port}");
    let server = Server { child, url };
    loop {
        if let Ok(channel) = Endpoint::from_shared(server.url.clone())
            .expect("url")
            .connect()
            .await
            && let Ok(answer) = HealthClient::new(channel)
                .check(HealthCheckRequest::default())
                .await
            && answer.into_inner().status == 1
        {
            return (server, started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "levelrail did not become healthy; see its log beside {}",
            data_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// How long the binary takes to run and exit with nothing to do (`--version`).
fn exec_floor() -> Duration {
    let started = Instant::now();
    let status = Command::new(harness::bin("levelrail"))
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .expect("levelrail --version");
    assert!(status.success());
    started.elapsed()
}

async fn connections(url: &str) -> Vec<Channel> {
    let mut out = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        out.push(
            Endpoint::from_shared(url.to_owned())
                .expect("url")
                .connect()
                .await
                .expect("connect"),
        );
    }
    out
}

/// The server's RSS growth per stream while `STREAMS` streams opened by `open` are held.
async fn per_stream_kib<S, F, Fut>(pid: &str, open: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = S>,
{
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = report::rss_kib(pid);
    let mut held = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        held.push(open(i).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = report::rss_kib(pid);
    drop(held);
    after.saturating_sub(before) as f64 / STREAMS as f64
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        state_step: Duration::from_secs(3600),
        rate_limit: None,
        ..Default::default()
    })
    .await
    .expect("fake");
    let tmp = tempfile::tempdir().expect("tempdir");
    let data_dir = tmp.path().join("data");

    // The first start creates the database, the keys and the CA; "cold start" is a start
    // of the stopped service on its existing data directory.
    let (first, first_start) = start(&data_dir, &fake.base_url()).await;
    drop(first);
    let floor = exec_floor();
    let (server, cold) = start(&data_dir, &fake.base_url()).await;
    let cold_ms = cold.as_secs_f64() * 1e3;
    report::figure(
        "cold start to healthy (restart; first start)",
        format!(
            "{cold_ms:.0} ms ({:.0} ms)",
            first_start.as_secs_f64() * 1e3
        ),
        format!(
            "exec `levelrail --version`: {:.0} ms",
            floor.as_secs_f64() * 1e3
        ),
        format!("≤ {COLD_START_TARGET_MS:.0} ms"),
        cold_ms <= COLD_START_TARGET_MS,
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_mb = report::rss_kib(&server.pid()) as f64 / 1024.0;
    report::figure(
        "idle RSS of levelrail serve",
        format!("{idle_mb:.1} MB"),
        "—".into(),
        format!("≤ {IDLE_RSS_TARGET_MB:.0} MB"),
        idle_mb <= IDLE_RSS_TARGET_MB,
    );

    let token = std::fs::read_to_string(data_dir.join("admin.token"))
        .expect("admin.token")
        .trim()
        .to_owned();
    let channels = connections(&server.url).await;
    CredentialsServiceClient::with_interceptor(channels[0].clone(), harness::Bearer(token.clone()))
        .set_credential(cpb::SetCredentialRequest {
            provider: cpb::Provider::Hetzner as i32,
            credential: Some(cpb::set_credential_request::Credential::Hetzner(
                cpb::ApiToken {
                    token: TOKEN.into(),
                },
            )),
        })
        .await
        .expect("credential");
    let target = ProvisionerServiceClient::with_interceptor(
        channels[0].clone(),
        harness::Bearer(token.clone()),
    )
    .provision(ppb::ProvisionRequest {
        provider: cpb::Provider::Hetzner as i32,
        region: "fsn1".into(),
        size: "cx22".into(),
        name: "watched-1".into(),
        role: ppb::Role::General as i32,
        ..Default::default()
    })
    .await
    .expect("provision")
    .into_inner()
    .provision
    .expect("provision")
    .id;

    // Each figure on a fresh process: memory freed by one set of streams would otherwise
    // be reused by the next and hide its cost.
    let watch = per_stream_kib(&server.pid(), |i| {
        let mut c = ProvisionerServiceClient::with_interceptor(
            channels[i % CONNECTIONS].clone(),
            harness::Bearer(token.clone()),
        );
        let id = target.clone();
        async move {
            let mut s = c
                .watch_provision(ppb::WatchProvisionRequest { id })
                .await
                .expect("watch")
                .into_inner();
            s.message().await.expect("first").expect("current state");
            s
        }
    })
    .await;
    drop(channels);
    drop(server);
    let (server, _) = start(&data_dir, &fake.base_url()).await;
    let channels = connections(&server.url).await;
    let health = per_stream_kib(&server.pid(), |i| {
        let mut c = HealthClient::new(channels[i % CONNECTIONS].clone());
        async move {
            let mut s = c
                .watch(HealthCheckRequest::default())
                .await
                .expect("health watch")
                .into_inner();
            s.message().await.expect("first").expect("status");
            s
        }
    })
    .await;
    report::figure(
        "server memory per WatchProvision stream (10,000 open)",
        format!("{watch:.1} KiB"),
        format!("health Watch stream: {health:.1} KiB"),
        format!("≤ {STREAM_TARGET_KIB:.0} KiB"),
        watch <= STREAM_TARGET_KIB,
    );
    drop(server);
    fake.shutdown();
}
