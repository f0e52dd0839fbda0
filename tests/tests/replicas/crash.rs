//! Kill the replica driving a provision at each step boundary: the other replica finishes
//! it, with exactly one server at the fake; a watcher on one replica sees the stages of a
//! provision another drives; a stopped-then-resumed old owner cannot write; and a
//! credentials service killed mid-provision stalls nothing that holds a grant, and the
//! rest resumes once it is back.
use std::time::Duration;

use levelrail_proto::provisioner::v1 as ppb;
use levelrail_sim::fakes::Fault;
use ppb::ProvisionStatus as S;

use crate::harness::Cluster;

/// Long enough for a takeover (lease expiry plus the recovery tick) and a boot.
const FINISH: Duration = Duration::from_secs(90);

fn status(p: &ppb::Provision) -> S {
    S::try_from(p.status).unwrap_or(S::Unspecified)
}

/// Where replica A is killed.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// Its join token is minted, and its create is being refused (503) and retried:
    /// nothing exists at the provider yet.
    AfterToken,
    /// Its create request reached the provider, which creates the server but has not
    /// answered.
    AfterCreateSent,
    /// The provider's answer (the server id) is recorded: `booting`.
    AfterServerRecorded,
    /// It waits for the server to run and the node to enroll.
    WhileWaiting,
}

async fn killed_driver_is_taken_over(name: &str, point: KillPoint) {
    let Some(mut cluster) = Cluster::start(name).await else {
        return;
    };
    let node = name.replace('_', "-");
    match point {
        KillPoint::AfterToken => {
            cluster
                .hetzner
                .faults()
                .inject(Some("POST"), "/servers", 10_000, Fault::Unavailable);
        }
        KillPoint::AfterCreateSent => {
            cluster.hetzner.faults().inject(
                Some("POST"),
                "/servers",
                1,
                Fault::Delay(Duration::from_secs(3)),
            );
        }
        KillPoint::AfterServerRecorded | KillPoint::WhileWaiting => {}
    }
    let id = cluster.provision(0, &node).await;
    match point {
        KillPoint::AfterToken | KillPoint::AfterCreateSent => {
            wait_for_create_request(&cluster, 0).await;
        }
        KillPoint::AfterServerRecorded => {
            cluster
                .wait_until(0, &id, FINISH, "booting", |p| status(p) >= S::Booting)
                .await;
        }
        KillPoint::WhileWaiting => {
            cluster
                .wait_until(0, &id, FINISH, "booting", |p| status(p) >= S::Booting)
                .await;
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    }
    let at_kill = cluster.get(0, &id).await;
    assert!(
        !matches!(status(&at_kill), S::Ready | S::Failed),
        "{point:?}: the provision finished before replica A was killed: {at_kill:?}"
    );
    cluster.replicas[0].kill();
    cluster.hetzner.faults().clear();

    let done = cluster
        .wait_until(1, &id, FINISH, "ready through replica B", |p| {
            matches!(status(p), S::Ready | S::Failed)
        })
        .await;
    assert_eq!(
        status(&done),
        S::Ready,
        "{point:?}: {done:?}\n{}",
        cluster.logs()
    );
    // A late answer to A's create must not leave a second server either.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        cluster.servers_of(&id),
        1,
        "{point:?}: servers at the fake: {:?}",
        cluster.hetzner.servers()
    );
    assert!(
        cluster.replicas[1]
            .log_text()
            .contains("resuming provision"),
        "replica B never resumed it:\n{}",
        cluster.logs()
    );
    cluster.finish().await;
}

/// How many server creates reached the fake.
fn creates(cluster: &Cluster) -> usize {
    cluster
        .hetzner
        .request_log()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/servers"))
        .count()
}

/// Until the fake has received more than `before` server creates.
async fn wait_for_create_request(cluster: &Cluster, before: usize) {
    let deadline = std::time::Instant::now() + FINISH;
    while creates(cluster) <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "no server create reached the fake\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_after_the_token_is_taken_over() {
    killed_driver_is_taken_over("kill_after_token", KillPoint::AfterToken).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_after_sending_the_create_is_taken_over_without_a_second_server() {
    killed_driver_is_taken_over("kill_after_create", KillPoint::AfterCreateSent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_after_recording_the_server_is_taken_over() {
    killed_driver_is_taken_over("kill_after_record", KillPoint::AfterServerRecorded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_while_waiting_is_taken_over() {
    killed_driver_is_taken_over("kill_while_waiting", KillPoint::WhileWaiting).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_on_one_replica_sees_the_stages_of_a_provision_another_drives() {
    let Some(cluster) = Cluster::start("watch_across").await else {
        return;
    };
    let id = cluster.provision(0, "watched-node").await;
    let mut stream = cluster
        .provisioner(1)
        .await
        .watch_provision(ppb::WatchProvisionRequest { id: id.clone() })
        .await
        .expect("watch through B")
        .into_inner();
    let mut seen: Vec<S> = Vec::new();
    let mut last = None;
    let watch = async {
        while let Some(event) = stream.message().await.expect("stream") {
            let p = event.provision.expect("provision");
            if seen.last() != Some(&status(&p)) {
                seen.push(status(&p));
            }
            last = Some(p);
        }
    };
    tokio::time::timeout(FINISH, watch)
        .await
        .unwrap_or_else(|_| panic!("the stream never ended; saw {seen:?}\n{}", cluster.logs()));
    let last = last.expect("at least one event");
    assert_eq!(
        seen.last(),
        Some(&S::Ready),
        "saw {seen:?}\n{}",
        cluster.logs()
    );
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "stages out of order: {seen:?}"
    );
    // Every stage reached B while it happened, or (two commits apart by less than the
    // read that followed the first) in the recorded stages of the state after it.
    let recorded: Vec<S> = last
        .stages
        .iter()
        .map(|s| S::try_from(s.status).unwrap_or(S::Unspecified))
        .collect();
    for stage in [
        S::Creating,
        S::Booting,
        S::Installing,
        S::Enrolling,
        S::Ready,
    ] {
        assert!(
            seen.contains(&stage) || recorded.contains(&stage),
            "{stage:?} never reached the watcher on B: streamed {seen:?}, recorded {recorded:?}"
        );
    }
    // Stages committed closer together than B's read of the row that follows each
    // announcement (here enrolling and ready, a few milliseconds apart) reach B folded into
    // the next snapshot's recorded stages, checked above; the others arrive live.
    assert!(
        seen.len() >= 3,
        "B's watcher saw too few stages live: {seen:?}\n{}",
        cluster.logs()
    );
    // Delivered by the change feed, not only by the 2 s fallback poll.
    assert!(
        cluster.replicas[1]
            .log_text()
            .contains("following the database's change feed"),
        "B has no change feed:\n{}",
        cluster.logs()
    );
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_owner_stopped_past_its_lease_cannot_write_when_it_resumes() {
    let Some(cluster) = Cluster::start("stale_writer").await else {
        return;
    };
    let id = cluster.provision(0, "fenced-node").await;
    cluster
        .wait_until(0, &id, FINISH, "booting", |p| status(p) >= S::Booting)
        .await;
    // A freezes (a long GC pause, a stalled VM) holding the lease; B takes over once it
    // lapses and finishes the provision.
    cluster.replicas[0].signal("STOP");
    let done = cluster
        .wait_until(1, &id, FINISH, "ready through B", |p| {
            matches!(status(p), S::Ready | S::Failed)
        })
        .await;
    assert_eq!(status(&done), S::Ready, "{done:?}\n{}", cluster.logs());
    // A wakes up mid-step, sure it still owns the provision: its writes are refused.
    cluster.replicas[0].signal("CONT");
    let log_deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !cluster.replicas[0]
        .log_text()
        .contains("stopping the driver")
        && !cluster.replicas[0].log_text().contains("lease")
    {
        assert!(
            std::time::Instant::now() < log_deadline,
            "A never noticed it lost the lease:\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = cluster.get(1, &id).await;
    assert_eq!(
        status(&after),
        S::Ready,
        "A overwrote B's result: {after:?}"
    );
    assert_eq!(
        after.generation,
        done.generation,
        "A wrote after the takeover: {after:?}\n{}",
        cluster.logs()
    );
    assert_eq!(
        cluster.servers_of(&id),
        1,
        "{:?}",
        cluster.hetzner.servers()
    );
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_credentials_service_stalls_nothing_cached_and_the_rest_resumes() {
    let Some(mut cluster) = Cluster::start("credentials_down").await else {
        return;
    };
    let first = cluster.provision(0, "cached-grant").await;
    cluster
        .wait_until(0, &first, FINISH, "booting", |p| status(p) >= S::Booting)
        .await;
    // The credential is stored again (a new row): every replica drops the grant it cached
    // (B's, if its orphan sweep at start took one) as soon as the change stream says so, in
    // milliseconds; A's driver keeps the client it holds.
    cluster.store_credential().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A asks anew for its next provision, and caches that grant.
    let warm = cluster.provision(0, "warm-grant").await;
    cluster
        .wait_until(0, &warm, FINISH, "booting", |p| status(p) >= S::Booting)
        .await;
    cluster.credentials.kill();
    // A holds the grant: a new provision through A needs no credentials service.
    let second = cluster.provision(0, "cached-again").await;
    cluster
        .wait_until(0, &second, FINISH, "booting", |p| status(p) >= S::Booting)
        .await;
    // A third one A accepts but cannot create yet (the provider answers 503)…
    cluster
        .hetzner
        .faults()
        .inject(Some("POST"), "/servers", 10_000, Fault::Unavailable);
    let before = creates(&cluster);
    let third = cluster.provision(0, "needs-a-grant").await;
    wait_for_create_request(&cluster, before).await;
    // …and A dies: B, which never held a grant, must wait for the credentials service.
    cluster.replicas[0].kill();
    cluster.hetzner.faults().clear();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let waiting = cluster.get(1, &third).await;
    assert_eq!(
        status(&waiting),
        S::Creating,
        "without the credentials service: {waiting:?}\n{}",
        cluster.logs()
    );
    assert_eq!(cluster.servers_of(&third), 0, "created without a grant");
    assert!(
        cluster.replicas[1]
            .log_text()
            .contains("credentials_unavailable"),
        "B did not report the credentials service unreachable:\n{}",
        cluster.logs()
    );
    cluster.restart_credentials();
    for id in [&first, &warm, &second, &third] {
        let done = cluster
            .wait_until(
                1,
                id,
                FINISH,
                "ready once the credentials service is back",
                |p| matches!(status(p), S::Ready | S::Failed),
            )
            .await;
        assert_eq!(status(&done), S::Ready, "{done:?}\n{}", cluster.logs());
        assert_eq!(cluster.servers_of(id), 1, "{:?}", cluster.hetzner.servers());
    }
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_through_one_replica_is_refused_by_the_other_within_a_second() {
    use levelrail_proto::auth::v1 as apb;
    use levelrail_proto::auth::v1::api_tokens_service_client::ApiTokensServiceClient;
    use levelrail_proto::credentials::v1::ListProvidersRequest;
    use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;

    use crate::harness::{Bearer, channel};

    let Some(cluster) = Cluster::start("revoke_token").await else {
        return;
    };
    let admin = Bearer::new(&cluster.token);
    let created = ApiTokensServiceClient::with_interceptor(
        channel(cluster.replicas[0].addr).await,
        admin.clone(),
    )
    .create_api_token(apb::CreateApiTokenRequest {
        label: "ci".into(),
        scope: apb::ApiTokenScope::Read as i32,
        expires_in: Some(prost_types::Duration {
            seconds: 3600,
            nanos: 0,
        }),
    })
    .await
    .expect("create through A")
    .into_inner();
    let id = created.info.expect("info").id;
    let mut on_b = CredentialsServiceClient::with_interceptor(
        channel(cluster.replicas[1].addr).await,
        Bearer::new(&created.token),
    );
    // B learns of the new token from the credentials service's stream.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while on_b.list_providers(ListProvidersRequest {}).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "B never accepted the new token"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // B knows the token's scope too: a read-only token may not change a credential.
    let refused = on_b
        .delete_credential(levelrail_proto::credentials::v1::DeleteCredentialRequest {
            provider: levelrail_proto::credentials::v1::Provider::Hetzner as i32,
        })
        .await
        .expect_err("a read token deleted a credential");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(
        refused.message().contains("credentials-admin"),
        "the refusal does not name the scope needed: {}",
        refused.message()
    );
    let revoked =
        ApiTokensServiceClient::with_interceptor(channel(cluster.replicas[0].addr).await, admin)
            .revoke_api_token(apb::RevokeApiTokenRequest { id: id.clone() })
            .await
            .expect("revoke through A")
            .into_inner();
    assert!(revoked.info.expect("info").revoked_at.is_some());
    let at = std::time::Instant::now();
    loop {
        match on_b.list_providers(ListProvidersRequest {}).await {
            Err(e) if e.code() == tonic::Code::Unauthenticated => break,
            _ => {
                assert!(
                    at.elapsed() < Duration::from_secs(1),
                    "B still accepts {id} a second after its revocation\n{}",
                    cluster.logs()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    eprintln!("revocation refused by replica B after {:?}", at.elapsed());
    cluster.finish().await;
}
