//! Latency of `SetCredential` (public listener) and `IssueAccess` (internal broker) at 1 and
//! 32 concurrent clients, beside a no-op unary RPC (gRPC health `Check`) on the same server
//! as the floor. Run with `cargo bench -p levelrail-tests --bench credentials`.
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
use harness::TestApp;
use levelrail_sim::secrets::Canary;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

const PER_CLIENT: usize = 400;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn measure<F, Fut>(name: &str, clients: usize, make: F)
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
    let wall = started.elapsed();
    all.sort();
    println!(
        "{name:<34} clients={clients:<3} n={:<6} p50={:>8.3} ms  p99={:>8.3} ms  throughput={:>8.0}/s",
        all.len(),
        percentile(&all, 0.50).as_secs_f64() * 1e3,
        percentile(&all, 0.99).as_secs_f64() * 1e3,
        all.len() as f64 / wall.as_secs_f64()
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
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(broker)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(
                broker_listener,
            )),
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
        measure("no-op unary (health Check)", clients, move |_| {
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

        let client = app.credentials_client().await;
        let token = canary.digitalocean_token();
        measure("SetCredential (digitalocean)", clients, move |_| {
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

        let ch = broker_channel.clone();
        measure("IssueAccess (hetzner, cached)", clients, move |_| {
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
    }
    app.stop().await;
}
