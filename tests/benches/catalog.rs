//! Catalog reads from the cache (p50/p99), and provider calls per provision lifecycle
//! (create → running → delete) against the fake clouds. Run with
//! `cargo bench --workspace --bench catalog` (or `scripts/bench`).
use std::sync::Arc;
use std::time::{Duration, Instant};

use levelrail_clouds::catalog::{CatalogCache, CatalogTtl};
use levelrail_clouds::digitalocean::DigitalOceanProvider;
use levelrail_clouds::hetzner::HetznerProvider;
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::{CloudProvider, CreateServer, Ownership, ServerState};
use levelrail_sim::fakes::digitalocean::{FakeDigitalOcean, FakeDigitalOceanConfig};
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig};
use secrecy::SecretString;

#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;

fn pct(sorted: &[Duration], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
}

async fn cached_reads(name: &str, client: &dyn CloudProvider, region: &str) {
    let cache = CatalogCache::new(CatalogTtl::default());
    let t = Instant::now();
    cache.sizes(client, "cred", region).await.expect("sizes");
    let miss = t.elapsed();
    let mut lat = Vec::with_capacity(20_000);
    for i in 0..20_000 {
        let t = Instant::now();
        if i % 2 == 0 {
            cache.sizes(client, "cred", region).await.expect("sizes");
        } else {
            cache.regions(client, "cred").await.expect("regions");
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    report::info(
        &format!("{name} catalog read from the cache (20,000 reads)"),
        format!(
            "p50 {:.2} µs, p99 {:.2} µs (the first read, a miss from the fake: {:.0} µs)",
            pct(&lat, 0.5),
            pct(&lat, 0.99),
            miss.as_secs_f64() * 1e6
        ),
        "—".into(),
    );
}

async fn lifecycle(client: &dyn CloudProvider, region: &str, size: &str) -> Duration {
    let req = CreateServer {
        name: "bench-1".into(),
        region: region.into(),
        size: size.into(),
        image: None,
        user_data: "#cloud-config\n{}\n".into(),
        ssh_public_keys: vec![],
        ssh_source_cidr: None,
        ownership: Ownership {
            control_plane: "cp-bench".into(),
            provision_id: "npv_bench1".into(),
            node_name: "bench-1".into(),
        },
    };
    let t = Instant::now();
    let server = client.create_server(&req).await.expect("create");
    loop {
        if client.get_server(&server.id).await.expect("get").state == ServerState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    client
        .delete_provision_resources(Some(&server.id), &req.ownership)
        .await
        .expect("delete");
    t.elapsed()
}

/// Provider calls of one server's lifecycle (the fake's own request log).
fn lifecycle_figure(cloud: &str, calls: usize, took: Duration) {
    report::info(
        &format!(
            "{cloud} provider calls per server lifecycle (create, poll at 2/s until running, delete)"
        ),
        format!("{calls} calls in {:.1} s", took.as_secs_f64()),
        "—".into(),
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let hz = FakeHetzner::start(FakeHetznerConfig {
        state_step: Duration::from_millis(500),
        ..Default::default()
    })
    .await
    .expect("fake hetzner");
    let hclient = HetznerProvider::new(
        &hz.base_url(),
        SecretString::from("fake-hetzner-token"),
        Arc::new(RateLimiter::hetzner()),
        RetryPolicy::default(),
    )
    .expect("client");
    cached_reads("hetzner", &hclient, "fsn1").await;
    hz.clear_request_log();
    let took = lifecycle(&hclient, "fsn1", "cx22").await;
    lifecycle_figure("Hetzner", hz.request_log().len(), took);

    let dox = FakeDigitalOcean::start(FakeDigitalOceanConfig {
        state_step: Duration::from_millis(500),
        ..Default::default()
    })
    .await
    .expect("fake digitalocean");
    let dclient = DigitalOceanProvider::new(
        &dox.base_url(),
        SecretString::from("dop_v1_fake"),
        Arc::new(RateLimiter::digitalocean()),
        RetryPolicy::default(),
    )
    .expect("client");
    cached_reads("digitalocean", &dclient, "nyc3").await;
    let before = dox.request_log().len();
    let took = lifecycle(&dclient, "nyc3", "s-1vcpu-1gb").await;
    lifecycle_figure("DigitalOcean", dox.request_log().len() - before, took);
}
