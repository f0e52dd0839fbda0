//! Provider calls per minute while provisions wait for their servers to boot, with 1 and
//! with 500 provisions in flight, against the Hetzner fake (whose servers never leave
//! `initializing` here). The calls are counted where the cloud counts them, at the fake.
//! Each count runs for a minute once every server was created and polled at least once,
//! at the production poll intervals (2 s backing off to 15 s).
//!
//! Why 500, not 1,000: the client keeps to Hetzner's own limit (3,600 requests per hour
//! per project, one per second once the burst is spent), and a create takes about six
//! requests (the adopt check, SSH keys, firewall, the server). 500 creates fit in the
//! burst; 1,000 would take the better part of an hour to create with one project, as they
//! would at the real Hetzner. The polling itself does not depend on the count (the
//! workflow test `provider_calls_do_not_grow_with_the_provisions_in_flight` runs 400 on a
//! paused clock).
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

const MANY: usize = 500;
const RATIO_TARGET: f64 = 2.0;
/// From the last create to the start of the count: every server polled, the pause backed
/// off to its longest (2 + 3 + 4.5 + 6.75 + 10.1 s).
const SETTLE: Duration = Duration::from_secs(45);
const WINDOW: Duration = Duration::from_secs(60);

/// Provider calls in one minute with `n` provisions booting, and how many servers were
/// never polled when the count began.
async fn calls_per_minute(n: usize) -> (usize, usize) {
    let (fake, app, _tmp) = fake_app::start(None).await;
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
    while fake.servers().len() < n {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "only {} of {n} servers created",
            fake.servers().len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(SETTLE).await;
    let polled = polled_provisions(&fake.request_log());
    let unpolled = fake
        .servers()
        .iter()
        .filter(|s| {
            let id = s
                .labels
                .get("levelrail-provision")
                .cloned()
                .unwrap_or_default();
            !polled.contains(&id)
        })
        .count();
    fake.clear_request_log();
    tokio::time::sleep(WINDOW).await;
    let calls = fake.request_log().len();
    app.stop().await;
    fake.shutdown();
    (calls, unpolled)
}

/// The provisions whose servers a logged request read: by the label selector of a list,
/// or by the id of a server read alone.
fn polled_provisions(log: &[levelrail_sim::fakes::hetzner::LoggedRequest]) -> Vec<String> {
    let mut out = Vec::new();
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
    let (one, _) = calls_per_minute(1).await;
    let (many, unpolled) = calls_per_minute(MANY).await;
    let ratio = many as f64 / one.max(1) as f64;
    report::figure(
        "provider calls/min, 500 in flight ÷ 1 in flight (Hetzner)",
        format!("{many}/min at 500 ({unpolled} servers never polled): ratio {ratio:.2}"),
        format!("1 in flight: {one}/min"),
        format!("≤ {RATIO_TARGET:.0}"),
        ratio <= RATIO_TARGET && unpolled == 0,
    );
}
