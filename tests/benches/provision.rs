//! Provisioning figures, on embedded SQLite and (when `LEVELRAIL_TEST_POSTGRES_URL` is set)
//! on PostgreSQL, each next to a no-op RPC (health `Check`) measured in the same run:
//! - enrollment → watcher: an agent enrolls with a provision's own join token (taken from
//!   the user-data the fake cloud received) while a `WatchProvision` stream is open; the
//!   figure is the time from the agent's enrollment answer to `ready` on the stream;
//! - `Provision` throughput and p50/p99 at 64 clients while 1,024 provisions are in flight
//!   in the background (their servers never leave `initializing`, so their drivers keep
//!   polling). The RPC only validates, checks the cached catalog and records the provision.
//!   Each measured load, the no-op's and `Provision`'s, begins with 100 ms of untimed
//!   no-op calls, so that the floor is not timed while its 64 clients still call in step
//!   (see `load`).
//! - the CPU time this process spends per `Provision` in that load (clients, server,
//!   drivers and fake together; on SQLite, with the part of SQLite's threads; on
//!   PostgreSQL, with that of the server's processes when it runs on this machine, which
//!   take the same two cores), next to that
//!   of a no-op call: it is what caps throughput on two cores, and the machine's noise moves
//!   it less than it moves latencies (the kernel counts it in ticks of 10 ms, so a figure is
//!   good to a few µs for Provision, about a tenth for the shorter no-op load).
//!
//! Run with `cargo bench --workspace --bench provision` (`LEVELRAIL_BENCH_BACKEND=sqlite`
//! or `=postgres` for one backend alone).
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use levelrail_agent::config::{ControlPlaneAddr, Enrollment};
use levelrail_agent::token::JoinToken;
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[path = "support/fake_app.rs"]
mod fake_app;
#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

const CLIENTS: usize = 64;
/// Calls per client in a measured load: 4,096 calls, so a p99 rests on 41 samples (with
/// 1,024 it rested on 10, and one stall of the machine moved it by a third).
const PER_CLIENT: usize = 64;
/// How long each client of a measured load makes untimed no-op calls before its timed
/// ones (see [`load`]).
const WARMUP: Duration = Duration::from_millis(100);
/// Provisions per client in the background load: 1,024 in flight.
const BACKGROUND_PER_CLIENT: usize = 16;
const ENROLLMENTS: usize = 64;
const THROUGHPUT_TARGET: f64 = 500.0;
const ENROLL_WATCH_TARGET_MS: f64 = 50.0;
/// The name of sqlx's SQLite connection threads (the writer and the readers), as the kernel
/// keeps it (15 bytes at most).
const SQLITE_THREADS: &str = "sqlx-sqlite-wor";

fn request(name: String) -> ppb::ProvisionRequest {
    ppb::ProvisionRequest {
        provider: Provider::Hetzner as i32,
        region: "fsn1".into(),
        size: "cx22".into(),
        name,
        role: ppb::Role::General as i32,
        ..Default::default()
    }
}

/// The CPU clocks a load is measured with: this process's (and its SQLite threads'), and
/// the database server's family when it runs here (its postmaster).
#[derive(Clone, Copy)]
struct Clocks {
    server: Option<u32>,
}

/// A reading of [`Clocks`]: (this process, its SQLite threads), and the server's.
type Reading = ((Duration, Duration), Option<Duration>);

impl Clocks {
    fn read(self) -> Reading {
        (
            report::cpu_time(SQLITE_THREADS),
            self.server.map(report::family_cpu),
        )
    }
}

/// Latencies of `CLIENTS` clients making `per_client` calls each, the wall time from the
/// first timed call to the last, and `clocks` read when the first client began its timed
/// calls (so that the warm-up is counted only in its last calls, at most one per client,
/// which overlap the timed ones). With `warmup`, every client makes no-op calls, untimed,
/// until `WARMUP` after the load began, and its timed calls follow at once.
///
/// Why: the 64 clients start together, and in the eight no-op loads of the four runs
/// examined (SQLite and PostgreSQL), the first 60 ms, while the calls still arrived in
/// step, held 32 to all of the 41 slowest calls (the p99): a no-op p99 read 2.0–7.1 ms
/// where the rest of the same load read 2.0–3.6 ms. The same start cost the longer
/// `Provision` calls nothing measurable (0 or 1 of their 41 slowest). So the floor was up
/// to three times its steady value. Every measured load now begins after the same warm-up:
/// the timed calls of the no-op load are those of its steady state, while the clients'
/// first `Provision` calls still arrive nearly together (they leave the warm-up within a
/// no-op call of each other), as they did before.
async fn load<F, Fut>(
    warmup: Option<&HealthClient<tonic::transport::Channel>>,
    per_client: usize,
    call: F,
    clocks: Clocks,
) -> (Vec<Duration>, Duration, Reading)
where
    F: Fn(usize, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let marked = Arc::new(OnceLock::new());
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let call = call.clone();
        let mut warmup = warmup.cloned();
        let marked = Arc::clone(&marked);
        tasks.push(tokio::spawn(async move {
            if let Some(health) = &mut warmup {
                while started.elapsed() < WARMUP {
                    health
                        .check(HealthCheckRequest::default())
                        .await
                        .expect("check");
                }
            }
            // The first client here reads the clocks and starts the wall clock; the others
            // wait for it, so none begins timing earlier.
            marked.get_or_init(|| {
                let reading = clocks.read();
                (Instant::now(), reading)
            });
            let mut lat = Vec::with_capacity(per_client);
            for i in 0..per_client {
                let t = Instant::now();
                call(c, i).await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("client"));
    }
    let (first, reading) = *marked.get().expect("read by the first client");
    let wall = first.elapsed();
    all.sort();
    (all, wall, reading)
}

/// The load of no-op RPCs (health `Check`), after the warm-up (see [`load`]).
async fn noop_load(
    health: &HealthClient<tonic::transport::Channel>,
    clocks: Clocks,
) -> (Vec<Duration>, Duration, Reading) {
    let client = health.clone();
    let call = move |_, _| {
        let mut h = client.clone();
        async move {
            h.check(HealthCheckRequest::default()).await.expect("check");
        }
    };
    load(Some(health), PER_CLIENT, call, clocks).await
}

/// The load of `Provision` calls, naming the nodes `<prefix>-<client>-<call>`.
async fn provision_load(
    client: &harness::ProvisionerClient,
    prefix: &'static str,
    per_client: usize,
    warmup: Option<&HealthClient<tonic::transport::Channel>>,
    clocks: Clocks,
) -> (Vec<Duration>, Duration, Reading) {
    let client = client.clone();
    let call = move |c, i| {
        let mut p = client.clone();
        async move {
            p.provision(request(format!("{prefix}-{c}-{i}")))
                .await
                .expect("provision");
        }
    };
    load(warmup, per_client, call, clocks).await
}

/// The join token in a user-data document (`LR1.<pin>.<id>.<secret>`).
fn token_in(user_data: &str) -> Option<String> {
    user_data
        .split_whitespace()
        .find(|w| w.starts_with("LR1."))
        .map(str::to_owned)
}

async fn run(backend: &str, database_url: Option<String>) {
    let on_sqlite = database_url.is_none();
    // The database server's processes, when it runs on this machine (as it does here).
    let clocks = Clocks {
        server: match &database_url {
            Some(url) => postmaster(url).await,
            None => None,
        },
    };
    let (fake, app, _tmp) = fake_app::start(None, database_url).await;
    let channel = app.channel().await;
    let client = app.provisioner_client().await;
    let health = HealthClient::new(channel.clone());

    // Enrollment → watcher, before the background load takes the provider's rate budget.
    let mut watchers = Vec::new();
    for i in 0..ENROLLMENTS {
        let p = client
            .clone()
            .provision(request(format!("enroll-{i}")))
            .await
            .expect("provision")
            .into_inner()
            .provision
            .expect("provision");
        let stream = client
            .clone()
            .watch_provision(ppb::WatchProvisionRequest { id: p.id })
            .await
            .expect("watch")
            .into_inner();
        watchers.push((p.name, stream));
    }
    let addr = ControlPlaneAddr::parse(&app.agent_addr.to_string()).expect("addr");
    let mut after_enroll = Vec::with_capacity(ENROLLMENTS);
    for (name, mut stream) in watchers {
        let token = loop {
            let found = fake
                .servers()
                .into_iter()
                .find(|s| s.name == name)
                .and_then(|s| token_in(&s.user_data));
            if let Some(t) = found {
                break t;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let token = JoinToken::parse(&token).expect("token");
        let enrollment = Enrollment {
            addr: addr.clone(),
            pin: token.fingerprint(),
            token,
            node_name: name,
        };
        // Everything the stream said before the enrollment.
        while let Ok(Ok(Some(_))) =
            tokio::time::timeout(Duration::from_millis(5), stream.message()).await
        {}
        let ready = tokio::spawn(async move {
            loop {
                let event = stream.message().await.expect("stream").expect("event");
                let status = event.provision.expect("provision").status;
                if status == ppb::ProvisionStatus::Ready as i32 {
                    return Instant::now();
                }
            }
        });
        levelrail_agent::enroll::enroll(&enrollment, Duration::from_secs(30))
            .await
            .expect("enrolls");
        let enrolled = Instant::now();
        let ready = ready.await.expect("watcher");
        after_enroll.push(ready.saturating_duration_since(enrolled));
    }
    after_enroll.sort();
    let (noop, _, _) = noop_load(&health, clocks).await;
    let p99 = report::pct_ms(&after_enroll, 0.99);
    report::figure(
        &format!("enrollment → watcher delivery ({backend})"),
        format!(
            "p50 {:.2} ms, p99 {p99:.2} ms",
            report::pct_ms(&after_enroll, 0.5)
        ),
        format!(
            "no-op p50 {:.2} ms, p99 {:.2} ms",
            report::pct_ms(&noop, 0.5),
            report::pct_ms(&noop, 0.99)
        ),
        format!("p99 ≤ {ENROLL_WATCH_TARGET_MS:.0} ms"),
        p99 <= ENROLL_WATCH_TARGET_MS,
    );

    // The background: 1,024 provisions in flight (64 clients × 16).
    provision_load(&client, "bg", BACKGROUND_PER_CLIENT, None, clocks).await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Each load's clocks are read where its timed calls begin and when they end.
    let (noop, noop_wall, (before_noop, _)) = noop_load(&health, clocks).await;
    let (after_noop, _) = clocks.read();
    let (prov, prov_wall, (before, server_before)) =
        provision_load(&client, "bench", PER_CLIENT, Some(&health), clocks).await;
    let (after, server_after) = clocks.read();
    let n = (CLIENTS * PER_CLIENT) as f64;
    let (noop_rate, rate) = (n / noop_wall.as_secs_f64(), n / prov_wall.as_secs_f64());
    let floor = format!(
        "no-op {noop_rate:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
        report::pct_ms(&noop, 0.5),
        report::pct_ms(&noop, 0.99)
    );
    report::figure(
        &format!("Provision throughput, 64 clients, 1,024 in flight before the load ({backend})"),
        format!("{rate:.0}/s"),
        floor.clone(),
        format!("≥ {THROUGHPUT_TARGET:.0}/s"),
        rate >= THROUGHPUT_TARGET,
    );
    let (p99, noop_p99) = (report::pct_ms(&prov, 0.99), report::pct_ms(&noop, 0.99));
    report::figure(
        &format!("Provision latency ({backend})"),
        format!("p50 {:.2} ms, p99 {p99:.2} ms", report::pct_ms(&prov, 0.5)),
        floor,
        format!("p99 ≤ 3 × no-op p99 = {:.2} ms", 3.0 * noop_p99),
        p99 <= 3.0 * noop_p99,
    );
    // CPU per call, whole process: the clients, the server, the drivers, the fake. It is
    // what caps throughput on these two cores, and the machine's noise moves it far less
    // than the latencies.
    let per_call = |cpu: Duration| cpu.as_secs_f64() * 1e6 / n;
    let total = per_call(after.0.saturating_sub(before.0));
    let (name, measured) = if on_sqlite {
        let sqlite = per_call(after.1.saturating_sub(before.1));
        (
            format!("CPU per Provision, whole process ({backend})"),
            format!("{total:.0} µs, of which SQLite's threads {sqlite:.0} µs"),
        )
    } else {
        let server = match (server_before, server_after) {
            (Some(before), Some(after)) => {
                format!("{:.0} µs", per_call(after.saturating_sub(before)))
            }
            _ => "not measured (not visible from here)".to_owned(),
        };
        (
            format!("CPU per Provision, this process and the database server ({backend})"),
            format!("{total:.0} µs, and the server's processes {server}"),
        )
    };
    report::info(
        &name,
        measured,
        format!(
            "no-op {:.0} µs",
            per_call(after_noop.0.saturating_sub(before_noop.0))
        ),
    );
    app.stop().await;
    fake.shutdown();
}

/// The PostgreSQL server's postmaster, when the server runs on this machine: the parent of
/// the backend that serves a connection of ours.
async fn postmaster(url: &str) -> Option<u32> {
    let pool = sqlx::PgPool::connect(url).await.ok()?;
    let pid: Option<i32> = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&pool)
        .await
        .ok();
    // Read while the backend still runs (the pool holds its connection).
    let parent = report::parent_named(u32::try_from(pid?).ok()?, "postgres");
    pool.close().await;
    parent
}

/// A fresh database on the PostgreSQL server at `base` (dropped first if a previous run
/// left it), and its URL.
async fn fresh_postgres(base: &str) -> String {
    use sqlx::Executor as _;
    const NAME: &str = "levelrail_bench";
    let admin = sqlx::PgPool::connect(base).await.expect("PostgreSQL");
    admin
        .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {NAME} WITH (FORCE)"
        ))))
        .await
        .expect("drop");
    admin
        .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE {NAME}"
        ))))
        .await
        .expect("create");
    admin.close().await;
    let (root, _) = base.rsplit_once('/').expect("a database in the URL");
    format!("{root}/{NAME}")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `LEVELRAIL_BENCH_BACKEND=sqlite` or `=postgres` runs one backend alone (comparing two
    // builds on one backend takes many runs on a noisy machine).
    let only = std::env::var_os("LEVELRAIL_BENCH_BACKEND")
        .map(|v| v.to_string_lossy().to_ascii_lowercase())
        .filter(|v| !v.is_empty());
    if let Some(o) = &only
        && o != "sqlite"
        && o != "postgres"
    {
        eprintln!("LEVELRAIL_BENCH_BACKEND must be sqlite or postgres, not {o:?}");
        std::process::exit(2);
    }
    let wants = |backend: &str| only.as_deref().is_none_or(|o| o == backend);
    if wants("sqlite") {
        run("SQLite", None).await;
    }
    if !wants("postgres") {
        return;
    }
    match std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL").and_then(|v| v.into_string().ok()) {
        Some(base) => {
            let url = fresh_postgres(&base).await;
            run("PostgreSQL", Some(url)).await;
        }
        None => eprintln!("PostgreSQL: skipped (set LEVELRAIL_TEST_POSTGRES_URL)"),
    }
}
