//! `Enroll` latency with 32 concurrent agents: each agent generates its key and CSR,
//! connects over TLS pinned to the control-plane CA, and redeems its own join token (the
//! agent's real enrollment code path), beside a no-op RPC (health `Check`, 32 at once) in
//! the same run. Run with `cargo bench --workspace --bench enroll` (or `scripts/bench`).
use std::time::{Duration, Instant};

use levelrail_agent::config::{ControlPlaneAddr, Enrollment};
use levelrail_agent::token::JoinToken;
use levelrail_provisioner::model::{NodeName, Role};
use secrecy::ExposeSecret as _;

#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

const AGENTS: usize = 32;
/// 96 enrollments from one address: within the agent listener's per-address burst (120,
/// then 10 a second), so the figure is what an enrollment costs, not that budget's pacing
/// (at 8 rounds, agents past the burst were refused and retried, and p99 was 3-5 s).
const ROUNDS: usize = 3;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let app = harness::TestApp::spawn(tmp.path()).await;
    let addr = ControlPlaneAddr::parse(&app.agent_addr.to_string()).expect("addr");
    // Every agent's join token, minted before the clock starts.
    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let mut enrollments = Vec::with_capacity(AGENTS);
        for i in 0..AGENTS {
            let name = format!("bench-{round}-{i}");
            let (_, token) = app
                .nodes
                .create_join_token(
                    None,
                    Some(NodeName::parse(&name).expect("name")),
                    None,
                    Role::General,
                )
                .await
                .expect("token");
            let token = JoinToken::parse(token.expose_secret()).expect("token parses");
            enrollments.push(Enrollment {
                addr: addr.clone(),
                pin: token.fingerprint(),
                token,
                node_name: name,
            });
        }
        rounds.push(enrollments);
    }
    let mut all = Vec::new();
    let started = Instant::now();
    for enrollments in rounds {
        let mut tasks = Vec::new();
        for enrollment in enrollments {
            tasks.push(tokio::spawn(async move {
                let t = Instant::now();
                levelrail_agent::enroll::enroll(&enrollment, Duration::from_secs(30))
                    .await
                    .expect("enrolls");
                t.elapsed()
            }));
        }
        for t in tasks {
            all.push(t.await.expect("task"));
        }
    }
    let wall = started.elapsed();
    all.sort();
    let mut floor = Vec::with_capacity(AGENTS * ROUNDS);
    let health = tonic_health::pb::health_client::HealthClient::new(app.channel().await);
    for _ in 0..ROUNDS {
        let calls = (0..AGENTS).map(|_| {
            let mut health = health.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                health
                    .check(tonic_health::pb::HealthCheckRequest::default())
                    .await
                    .expect("check");
                t.elapsed()
            })
        });
        for call in calls.collect::<Vec<_>>() {
            floor.push(call.await.expect("check"));
        }
    }
    floor.sort();
    report::info(
        &format!(
            "Enroll, {AGENTS} agents at once, {ROUNDS} rounds (keygen, CSR, pinned TLS, redeem, sign)"
        ),
        format!(
            "{}, max {:.2} ms, {:.0}/s",
            report::p50_p99(&all),
            report::pct_ms(&all, 1.0),
            all.len() as f64 / wall.as_secs_f64()
        ),
        format!("no-op {}", report::p50_p99(&floor)),
    );
    assert_eq!(
        app.nodes.list_nodes().await.expect("list").len(),
        AGENTS * ROUNDS
    );
    app.stop().await;
}
