//! Provider calls per minute while provisions wait for their servers to boot, with 1 and
//! with 1,000 provisions in flight, against the Hetzner fake (whose servers never leave
//! `initializing` here). The calls are counted where the cloud counts them, at the fake.
//! Each count runs for a minute once every server was created and polled at least once
//! and the polling backed off, at the production poll intervals (2 s backing off to 15 s).
//!
//! The fake's project has a limit of 36,000 requests an hour, which Hetzner grants on
//! request, reported in every answer's `RateLimit-Limit` as the real API does, and the
//! client follows it. A create takes about six requests (the adopt check, SSH keys,
//! firewall, the server), so 1,000 creates need 6,000: at the default 3,600 an hour they
//! would take the better part of an hour, at the real Hetzner as here.
//!
//! Run with `cargo bench --workspace --bench provider_calls`.
use std::time::{Duration, Instant};

use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;

#[path = "support/fake_app.rs"]
mod fake_app;
#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

const MANY: usize = 1000;
/// The fake project's request limit per hour.
const PROJECT_LIMIT: u32 = 36_000;
const RATIO_TARGET: f64 = 2.0;
/// From the first look at every server to the start of the count: the pause backed off to
/// its longest (2 + 3 + 4.5 + 6.75 + 10.1 s).
const BACK_OFF: Duration = Duration::from_secs(30);
/// The longest the creates, then the first look at every server, may take.
const CREATE_LIMIT: Duration = Duration::from_secs(300);
const WINDOW: Duration = Duration::from_secs(60);

/// Provider calls in one minute with `n` provisions booting, and the 429 answers of the
/// whole run.
async fn calls_per_minute(n: usize) -> (usize, usize) {
    let (fake, app, _tmp) = fake_app::start(Some(PROJECT_LIMIT), None).await;
    let client = app.provisioner_client().await;
    let mut tasks = Vec::new();
    for c in 0..16 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in (c..n).step_by(16) {
                client
                    .clone()
                    .provision(ppb::ProvisionRequest {
                        provider: Provider::Hetzner as i32,
                        region: "fsn1".into(),
                        size: "cx22".into(),
                        name: format!("poll-{i}"),
                        role: ppb::Role::General as i32,
                        ..Default::default()
                    })
                    .await
                    .expect("provision");
            }
        }));
    }
    for t in tasks {
        t.await.expect("client");
    }
    let started = Instant::now();
    loop {
        let servers = fake.servers();
        let polled = polled_provisions(&fake.request_log());
        let unpolled = servers
            .iter()
            .filter(|s| {
                s.labels
                    .get("levelrail-provision")
                    .is_none_or(|id| !polled.contains(id))
            })
            .count();
        if servers.len() == n && unpolled == 0 {
            break;
        }
        assert!(
            started.elapsed() < CREATE_LIMIT,
            "{} of {n} servers created, {unpolled} of them never polled",
            servers.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(BACK_OFF).await;
    let refused_before = refusals(&fake.take_request_log());
    tokio::time::sleep(WINDOW).await;
    let log = fake.request_log();
    app.stop().await;
    fake.shutdown();
    (log.len(), refused_before + refusals(&log))
}

fn refusals(log: &[levelrail_sim::fakes::hetzner::LoggedRequest]) -> usize {
    log.iter().filter(|r| r.status == Some(429)).count()
}

/// The provisions whose servers a logged request read: by the label selector of a list,
/// or by the id of a server read alone.
fn polled_provisions(
    log: &[levelrail_sim::fakes::hetzner::LoggedRequest],
) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for r in log.iter().filter(|r| r.method == "GET") {
        if let Some(servers) = r.response.get("servers").and_then(|s| s.as_array()) {
            out.extend(servers.iter().filter_map(provision_of));
        } else if let Some(server) = r.response.get("server") {
            out.extend(provision_of(server));
        }
    }
    out
}

fn provision_of(server: &serde_json::Value) -> Option<String> {
    server
        .pointer("/labels/levelrail-provision")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let (one, refused_one) = calls_per_minute(1).await;
    let (many, refused) = calls_per_minute(MANY).await;
    let ratio = many as f64 / one.max(1) as f64;
    // Both counts must see polling (a poller that stopped would make any ratio), and the
    // client must have kept to the project's limit.
    report::figure(
        "provider calls/min, 1,000 in flight ÷ 1 in flight (Hetzner)",
        format!(
            "{many}/min at 1,000: ratio {ratio:.2} (429 answers in both runs: {})",
            refused + refused_one
        ),
        format!("1 in flight: {one}/min"),
        format!("≤ {RATIO_TARGET:.0}, with calls at both and no 429"),
        one > 0 && many > 0 && refused + refused_one == 0 && ratio <= RATIO_TARGET,
    );
}
