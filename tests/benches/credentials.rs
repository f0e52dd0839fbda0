//! Latency of `SetCredential` (public listener) and `IssueAccess` (internal broker) at 1 and
//! 32 concurrent clients, beside a no-op unary RPC (gRPC health `Check` on the public
//! listener, the same process) as the floor. Run with `cargo bench --workspace --bench credentials` (or `scripts/bench`).
use std::time::{Duration, Instant};

use levelrail_credentials::grpc::BrokerService;
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::credential_broker_client::CredentialBrokerClient;
use levelrail_proto::credentials::internal::v1::credential_broker_server::CredentialBrokerServer;
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
#[path = "../tests/api/harness.rs"]
#[allow(dead_code, unreachable_pub)]
mod harness;
#[path = "support/report.rs"]
#[allow(dead_code)]
mod report;
use harness::TestApp;
use levelrail_sim::secrets::Canary;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

const PER_CLIENT: usize = 400;

/// `clients` clients making [`PER_CLIENT`] calls each (after a warm-up): the latencies,
/// sorted, and the calls per second.
async fn measure<F, Fut>(clients: usize, make: F) -> (Vec<Duration>, f64)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    // Warm-up.
    for i in 0..20 {
        make(i).await;
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(PER_CLIENT);
            for i in 0..PER_CLIENT {
                let t = Instant::now();
                make(c * PER_CLIENT + i).await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("bench task"));
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    all.sort();
    (all, rate)
}

/// A figure with its rate, next to the no-op's.
fn figure(name: &str, clients: usize, (lat, rate): (Vec<Duration>, f64), floor: &str) {
    report::info(
        &format!("{name}, {clients} at once"),
        format!("{}, {rate:.0}/s", report::p50_p99(&lat)),
        floor.to_owned(),
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn(tmp.path()).await;
    let canary = Canary::new();

    // The broker is internal: serve it on its own loopback listener, as a standalone
    // deployment would (without the mTLS, which is not what is measured here).
    let broker_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let broker_addr = broker_listener.local_addr().expect("addr");
    let broker = CredentialBrokerServer::new(BrokerService::new(app.credentials.clone()));
    // Without Nagle's algorithm, as the product's listeners accept: a small answer held back
    // for the client's delayed ACK cost some calls 40 ms (p99 43 ms at 32 at once).
    let incoming =
        tonic::transport::server::TcpIncoming::from(broker_listener).with_nodelay(Some(true));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(broker)
            .serve_with_incoming(incoming),
    );
    let broker_channel: Channel = Endpoint::from_shared(format!("http://{broker_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();

    let mut creds = app.credentials_client().await;
    creds
        .set_credential(pb::SetCredentialRequest {
            provider: pb::Provider::Hetzner as i32,
            credential: Some(Credential::Hetzner(pb::ApiToken {
                token: canary.hetzner_token(),
            })),
        })
        .await
        .expect("seed credential");

    for clients in [1usize, 32] {
        let ch = app.channel().await;
        let (noop, noop_rate) = measure(clients, move |_| {
            let mut c = HealthClient::new(ch.clone());
            async move {
                c.check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .expect("check");
            }
        })
        .await;
        let floor = format!("no-op {}, {noop_rate:.0}/s", report::p50_p99(&noop));

        let client = app.credentials_client().await;
        let token = canary.digitalocean_token();
        let set = measure(clients, move |_| {
            let mut c = client.clone();
            let token = token.clone();
            async move {
                c.set_credential(pb::SetCredentialRequest {
                    provider: pb::Provider::Digitalocean as i32,
                    credential: Some(Credential::Digitalocean(pb::ApiToken { token })),
                })
                .await
                .expect("set");
            }
        })
        .await;
        figure("SetCredential (DigitalOcean token)", clients, set, &floor);

        let ch = broker_channel.clone();
        let issue = measure(clients, move |_| {
            let mut c = CredentialBrokerClient::new(ch.clone());
            async move {
                c.issue_access(bpb::IssueAccessRequest {
                    provider: pb::Provider::Hetzner as i32,
                    purpose: "bench".into(),
                    fresh: false,
                })
                .await
                .expect("issue");
            }
        })
        .await;
        figure(
            "IssueAccess (Hetzner, cached grant)",
            clients,
            issue,
            &floor,
        );
    }
    app.stop().await;
}
