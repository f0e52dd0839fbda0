//! How long a watcher on replica B takes to see a change made on replica A: two control
//! planes sharing one PostgreSQL database (a fresh one, dropped afterwards), a provision A
//! drives to `installing` (its server runs; no node boots on it), a `WatchProvision` stream
//! on B, and 1,000 changes to it committed one after the other through the provision
//! store, exactly as a driver commits (a conditional `update_provision`; each sets a new
//! address, which every watcher shows). Each delay is from the commit's return to B's
//! stream delivering it: `NOTIFY`, B's `LISTEN` connection, B's read of the row, its
//! publish, the gRPC stream. Beside it, a no-op RPC on B, in the same run.
//! Needs `LEVELRAIL_TEST_POSTGRES_URL`. Run with
//! `cargo bench --workspace --bench replicas` (or `scripts/bench`).
use std::time::{Duration, Instant};

use base64::Engine as _;
use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_provisioner::model::provision::ProvisionId;
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig};
use secrecy::SecretString;
use sqlx::Connection as _;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

const TOKEN: &str = "benchtoken00000000000000000000000000000000000000000000000000000000";
/// Changes measured.
const CHANGES: usize = 1000;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // Warnings only (LEVELRAIL_LOG overrides): a stall names its cause.
    levelrail::telemetry::init();
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

    // The server runs a second after its create (`installing`), and no node ever boots
    // on it, so nothing but the measured writes changes the provision from there.
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        state_step: Duration::from_millis(500),
        rate_limit: None,
        ..Default::default()
    })
    .await
    .expect("fake");
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
        cfg.master_key = Some(levelrail::config::MasterKey {
            current: SecretString::from(master_key.clone()),
            previous: None,
        });
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

    let id = a
        .clone()
        .provision(ppb::ProvisionRequest {
            provider: Provider::Hetzner as i32,
            region: "fsn1".into(),
            size: "cx22".into(),
            name: "watched".into(),
            ..Default::default()
        })
        .await
        .expect("provision")
        .into_inner()
        .provision
        .expect("provision")
        .id;
    let installing = ppb::ProvisionStatus::Installing as i32;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = a
            .clone()
            .get_provision(ppb::GetProvisionRequest { id: id.clone() })
            .await
            .expect("get")
            .into_inner()
            .provision
            .expect("provision");
        if p.status == installing && !p.ip_address.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "never installing: {p:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut on_b = b
        .clone()
        .watch_provision(ppb::WatchProvisionRequest { id: id.clone() })
        .await
        .expect("watch on B")
        .into_inner();
    on_b.message()
        .await
        .expect("stream")
        .expect("current state");

    let store = levelrail_provisioner::store::open_provisioner_store(&url)
        .await
        .expect("the shared database");
    let pid = ProvisionId::parse(&id).expect("id");
    let mut delays = Vec::with_capacity(CHANGES);
    let started = Instant::now();
    for n in 0..CHANGES {
        let ip = format!("10.{}.{}.{}", 1 + n / 62_500, (n / 250) % 250, n % 250 + 1);
        let committed = loop {
            let mut record = store.get_provision(&pid).await.expect("read").expect("row");
            record.ip_address = Some(ip.clone());
            if store
                .update_provision(&record)
                .await
                .expect("write")
                .is_some()
            {
                break Instant::now();
            }
        };
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), on_b.message())
                .await
                .expect("B delivered the change within 10 s")
                .expect("stream")
                .expect("an event");
            if event.provision.expect("provision").ip_address == ip {
                delays.push(committed.elapsed());
                break;
            }
        }
    }
    let wall = started.elapsed();
    delays.sort();
    report::info(
        &format!("a change committed on replica A → a watcher on replica B ({CHANGES} changes)"),
        format!(
            "{}, max {:.2} ms ({:.1} s)",
            report::p50_p99(&delays),
            delays.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
            wall.as_secs_f64()
        ),
        format!("no-op on B {}", report::p50_p99(&floor)),
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
