//! How long a watcher on replica B takes to see a change made on replica A: two control
//! planes sharing one PostgreSQL database (a fresh one, dropped afterwards), a
//! `WatchProvision` stream on each for every provision, provisions driven by A
//! (`creating → booting`, then cancelled: `→ failed`). Each change's delay is the time B's
//! stream delivers it minus the time A's stream did (A publishes at the commit; B hears
//! it through `LISTEN/NOTIFY`, reads the row and publishes). Beside it, a no-op RPC on B.
//! Needs `LEVELRAIL_TEST_POSTGRES_URL`. Run with
//! `cargo bench -p levelrail-tests --bench replicas`.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig};
use secrecy::SecretString;
use sqlx::Connection as _;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;

const TOKEN: &str = "benchtoken00000000000000000000000000000000000000000000000000000000";
/// Provisions; each makes two changes B must see (`booting`, `failed`).
const PROVISIONS: usize = 600;
/// Provisions in flight at once.
const BATCH: usize = 30;

fn pct(sorted: &[Duration], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
}

type Client = ProvisionerServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, harness::Bearer>,
>;

/// When each (provision, status) reached a stream, after its first (current-state) event.
type Seen = Arc<Mutex<HashMap<(String, i32), Instant>>>;

fn follow(mut client: Client, id: String, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = client
            .watch_provision(ppb::WatchProvisionRequest { id: id.clone() })
            .await
            .expect("watch")
            .into_inner();
        let mut first = true;
        while let Ok(Some(event)) = stream.message().await {
            let at = Instant::now();
            let status = event.provision.expect("provision").status;
            if !first {
                seen.lock()
                    .expect("lock")
                    .entry((id.clone(), status))
                    .or_insert(at);
            }
            first = false;
        }
    })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let Some(admin_url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
        eprintln!("skipped: set LEVELRAIL_TEST_POSTGRES_URL to a PostgreSQL server");
        return;
    };
    let admin_url = admin_url.into_string().expect("UTF-8 URL");
    let name = format!("lr_bench_replicas_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&admin_url)
        .await
        .expect("PostgreSQL");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut admin)
        .await
        .expect("create database");
    let url = format!("{}/{name}", admin_url.rsplit_once('/').expect("path").0);

    // Creates answer after 200 ms, so both streams are open before `booting`; servers then
    // stay `initializing`, so nothing but the cancel moves a provision on.
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        state_step: Duration::from_secs(3600),
        rate_limit: None,
        ..Default::default()
    })
    .await
    .expect("fake");
    fake.faults().inject(
        Some("POST"),
        "/servers",
        usize::MAX,
        Fault::Delay(Duration::from_millis(200)),
    );
    let master_key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let mut apps = Vec::new();
    let mut dirs: Vec<tempfile::TempDir> = Vec::new();
    for i in 0..2 {
        let tmp = tempfile::tempdir().expect("tempdir");
        if i == 1 {
            // The token the first replica minted in the shared database.
            std::fs::copy(
                dirs[0].path().join("admin.token"),
                tmp.path().join("admin.token"),
            )
            .expect("admin token");
        }
        let mut cfg = harness::test_config(tmp.path());
        harness::set_endpoint(&mut cfg, ProviderId::Hetzner, "api", fake.base_url());
        cfg.storage.database_url = Some(SecretString::from(url.clone()));
        cfg.master_key = Some(SecretString::from(master_key.clone()));
        apps.push(harness::TestApp::start(cfg).await.expect("replica"));
        dirs.push(tmp);
    }
    apps[0]
        .credentials
        .set_credential(CredentialInput::Token {
            provider: ProviderId::Hetzner,
            token: SecretString::from(TOKEN),
        })
        .await
        .expect("credential");
    let client = |i: usize| {
        let app = &apps[i];
        async move {
            ProvisionerServiceClient::with_interceptor(
                app.channel().await,
                harness::Bearer(app.token.clone()),
            )
        }
    };
    let (a, b) = (client(0).await, client(1).await);

    let mut health = HealthClient::new(apps[1].channel().await);
    let mut floor = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("check");
        floor.push(t.elapsed());
    }
    floor.sort();

    let (seen_a, seen_b): (Seen, Seen) = Default::default();
    let started = Instant::now();
    for batch in 0..PROVISIONS / BATCH {
        let mut tasks = Vec::new();
        for i in 0..BATCH {
            let (mut a, b) = (a.clone(), b.clone());
            let (seen_a, seen_b) = (seen_a.clone(), seen_b.clone());
            tasks.push(tokio::spawn(async move {
                let id = a
                    .provision(ppb::ProvisionRequest {
                        provider: Provider::Hetzner as i32,
                        region: "fsn1".into(),
                        size: "cx22".into(),
                        name: format!("watch-{batch}-{i}"),
                        ..Default::default()
                    })
                    .await
                    .expect("provision")
                    .into_inner()
                    .provision
                    .expect("provision")
                    .id;
                let on_a = follow(a.clone(), id.clone(), seen_a.clone());
                let on_b = follow(b, id.clone(), seen_b.clone());
                let booting = (id.clone(), ppb::ProvisionStatus::Booting as i32);
                let deadline = Instant::now() + Duration::from_secs(30);
                while !seen_b.lock().expect("lock").contains_key(&booting) {
                    assert!(
                        Instant::now() < deadline,
                        "B never saw {} booting",
                        booting.0
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                a.cancel_provision(ppb::CancelProvisionRequest { id })
                    .await
                    .expect("cancel");
                let _ = tokio::join!(on_a, on_b);
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
    }
    let wall = started.elapsed();

    let mut delays: Vec<Duration> = {
        let (seen_a, seen_b) = (seen_a.lock().expect("lock"), seen_b.lock().expect("lock"));
        seen_b
            .iter()
            .filter_map(|(key, at_b)| Some(at_b.saturating_duration_since(*seen_a.get(key)?)))
            .collect()
    };
    delays.sort();
    println!(
        "no-op unary on B (health Check)      n={}  p50={:.2} ms  p99={:.2} ms",
        floor.len(),
        pct(&floor, 0.5),
        pct(&floor, 0.99)
    );
    println!(
        "change on A seen by a watcher on B   n={}  p50={:.2} ms  p99={:.2} ms  max={:.2} ms  ({} provisions in {:.1} s)",
        delays.len(),
        pct(&delays, 0.5),
        pct(&delays, 0.99),
        delays.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        PROVISIONS,
        wall.as_secs_f64()
    );
    assert!(
        delays.len() >= 1000,
        "only {} changes measured",
        delays.len()
    );
    for app in apps {
        app.stop().await;
    }
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await;
}
