//! A `levelrail serve` process killed (`SIGKILL`) while `Provision` requests are being
//! group-committed to its SQLite database: every provision it acknowledged is there after
//! the restart, and is driven again once its lease lapses.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use tonic::transport::Endpoint;

use crate::harness::{Bearer, ProvisionerClient as Client, ServerProcess};

/// Clients calling `Provision` back to back.
const CLIENTS: usize = 8;
/// Provisions acknowledged before the kill.
const BEFORE_KILL: usize = 24;
const FLAGS: [&str; 5] = ["--demo", "--lease-ttl", "2s", "--token-rate-limit", "0"];

async fn client(server: &ServerProcess) -> Client {
    let channel = Endpoint::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connects");
    ProvisionerServiceClient::with_interceptor(channel, Bearer(server.admin_token()))
}

async fn get(client: &mut Client, id: &str) -> Result<ppb::Provision, tonic::Status> {
    let answer = client
        .get_provision(ppb::GetProvisionRequest { id: id.to_owned() })
        .await?;
    Ok(answer.into_inner().provision.expect("provision"))
}

fn request(name: &str) -> ppb::ProvisionRequest {
    ppb::ProvisionRequest {
        provider: Provider::Hetzner as i32,
        region: "fsn1".into(),
        size: "cx22".into(),
        name: name.into(),
        role: ppb::Role::General as i32,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisions_acknowledged_before_a_sigkill_survive_it_and_are_driven_again() {
    // Arrange: clients provisioning back to back, so writes are queued and grouped.
    let tmp = tempfile::tempdir().expect("temp dir");
    let data_dir = tmp.path().join("data");
    let mut server = ServerProcess::start(&data_dir, "info", &FLAGS);
    let first = client(&server).await;
    let acked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (mut client, acked) = (first.clone(), Arc::clone(&acked));
        clients.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("crash-{c}-{i}");
                match client.provision(request(&name)).await {
                    Ok(answer) => {
                        let p = answer.into_inner().provision.expect("provision");
                        acked.lock().expect("acked").push((p.id, name));
                    }
                    // The server is gone (or refused: checked below).
                    Err(status) => return status,
                }
            }
            unreachable!("the loop ends with the server")
        }));
    }
    let started = Instant::now();
    while acked.lock().expect("acked").len() < BEFORE_KILL {
        if let Some(done) = clients.iter_mut().find(|c| c.is_finished()) {
            let status = done.await.expect("client");
            panic!("a Provision failed before the kill: {status:?}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} provisions in 60 s; see the log beside {}",
            acked.lock().expect("acked").len(),
            data_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    // Act: SIGKILL with requests in flight, then a restart on the same data directory.
    server.kill();
    for c in clients {
        let status = c.await.expect("client");
        assert!(
            matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
            ),
            "a call ended otherwise than by the kill: {status:?}"
        );
    }
    let acked = acked.lock().expect("acked").clone();
    let server = ServerProcess::start(&data_dir, "info", &FLAGS);
    let mut client = client(&server).await;

    // Assert: every acknowledged provision is there; those the kill left in `creating`
    // (their creates not sent or not recorded) move on, none to `failed`.
    let mut left_creating = Vec::new();
    for (id, name) in &acked {
        let p = get(&mut client, id)
            .await
            .unwrap_or_else(|e| panic!("acknowledged provision {name} lost: {e}"));
        assert_eq!(&p.name, name);
        if p.status == ppb::ProvisionStatus::Creating as i32 {
            left_creating.push((id, name));
        }
    }
    assert!(
        !left_creating.is_empty(),
        "the kill came after every acknowledged create: nothing to resume"
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    for (id, name) in left_creating {
        loop {
            let p = get(&mut client, id).await.expect("get");
            assert_ne!(
                p.status,
                ppb::ProvisionStatus::Failed as i32,
                "{name} failed after the restart: {p:?}"
            );
            if p.status != ppb::ProvisionStatus::Creating as i32 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name} was never driven again after the restart: {p:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
