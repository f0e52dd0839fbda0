//! Provisioning figures: `Provision` latency at 64 concurrent clients with provider latency
//! excluded (the RPC only validates, claims the name and records the provision; the server
//! is created by the background workflow), beside a no-op RPC; enrollment → watcher
//! delivery; memory per open `WatchProvision` stream at 10,000 streams.
//! Run with `cargo bench -p levelrail-tests --bench provision`.
use std::time::{Duration, Instant};

use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig};
use secrecy::SecretString;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;

const TOKEN: &str = "benchtoken00000000000000000000000000000000000000000000000000000000";

fn pct(sorted: &[Duration], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // Servers stay `initializing` for an hour: nothing finishes, so streams stay open and
    // the workflow adds no load beyond its first create.
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        state_step: Duration::from_secs(3600),
        rate_limit: None,
        ..Default::default()
    })
    .await
    .expect("fake");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = harness::test_config(tmp.path());
    harness::set_endpoint(&mut cfg, ProviderId::Hetzner, "api", fake.base_url());
    let app = harness::TestApp::start(cfg).await.expect("app");
    app.credentials
        .set_credential(CredentialInput::Token {
            provider: ProviderId::Hetzner,
            token: SecretString::from(TOKEN),
        })
        .await
        .expect("credential");
    let channel = app.channel().await;
    let client = ProvisionerServiceClient::with_interceptor(
        channel.clone(),
        harness::Bearer(app.token.clone()),
    );
    // Warm the catalog cache (the only provider call on the Provision path).
    client
        .clone()
        .provision(request("warm-0".into()))
        .await
        .expect("warm");

    const CLIENTS: usize = 64;
    const PER: usize = 16;
    for (label, provision) in [("no-op unary (health Check)", false), ("Provision", true)] {
        let mut tasks = Vec::new();
        let started = Instant::now();
        for c in 0..CLIENTS {
            let mut p = client.clone();
            let mut h = HealthClient::new(channel.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                for i in 0..PER {
                    let t = Instant::now();
                    if provision {
                        p.provision(request(format!("bench-{c}-{i}")))
                            .await
                            .expect("provision");
                    } else {
                        h.check(HealthCheckRequest {
                            service: String::new(),
                        })
                        .await
                        .expect("check");
                    }
                    lat.push(t.elapsed());
                }
                lat
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("task"));
        }
        let wall = started.elapsed();
        all.sort();
        println!(
            "{label:<28} clients={CLIENTS} n={}  p50={:.2} ms  p99={:.2} ms  throughput={:.0}/s",
            all.len(),
            pct(&all, 0.5),
            pct(&all, 0.99),
            all.len() as f64 / wall.as_secs_f64()
        );
    }

    // Memory per open WatchProvision stream: 10,000 streams on one provision over 100
    // connections (the listener allows 100 streams per connection). Client and server
    // share this process, so the figure is an upper bound for the server side.
    let target = client
        .clone()
        .provision(request("watched-1".into()))
        .await
        .expect("provision")
        .into_inner()
        .provision
        .expect("p")
        .id;
    let mut conns = Vec::new();
    for _ in 0..100 {
        conns.push(ProvisionerServiceClient::with_interceptor(
            app.channel().await,
            harness::Bearer(app.token.clone()),
        ));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib();
    let mut streams = Vec::with_capacity(10_000);
    for i in 0..10_000 {
        let mut c = conns[i % conns.len()].clone();
        let mut s = c
            .watch_provision(ppb::WatchProvisionRequest { id: target.clone() })
            .await
            .expect("watch")
            .into_inner();
        s.message()
            .await
            .expect("first message")
            .expect("current state first");
        streams.push(s);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    println!(
        "WatchProvision streams open=10000  RSS {} MiB → {} MiB  ≈ {:.1} KiB per stream (client + server)",
        before / 1024,
        after / 1024,
        (after.saturating_sub(before)) as f64 / 10_000.0
    );
    drop(streams);
    app.stop().await;
}
