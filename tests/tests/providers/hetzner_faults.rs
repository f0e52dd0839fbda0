//! Idempotency under faults: 200 creates while a fifth of all calls fail in every way the
//! fake knows (429, 500, 503, a delay past the client's timeout, a dropped connection, a
//! capacity error, a create processed but its answer lost). No provision may end up with two
//! servers, and every create either succeeds or fails with a classified error.
use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::{CloudProvider as _, ErrorKind};
use levelrail_sim::fakes::Fault;

use crate::hetzner_support::{TOKEN, client_with, create_request, start_fake};

const CREATES: usize = 200;

#[tokio::test(start_paused = true)]
async fn two_hundred_creates_with_a_fifth_of_calls_faulted_never_duplicate_a_server() {
    // Arrange: every call under /v1 may fail; the client times out after 2 s.
    let fake = start_fake(|_| {}).await;
    let policy = RetryPolicy {
        max_attempts: 4,
        base_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(2),
        max_retry_after: Duration::from_secs(60),
        timeout: Duration::from_secs(2),
    };
    let hetzner = client_with(&fake, TOKEN, policy);
    let faults = vec![
        Fault::RateLimited {
            retry_after_secs: 1,
        },
        Fault::InternalError,
        Fault::Unavailable,
        Fault::Delay(Duration::from_secs(5)),
        Fault::DropConnection,
        Fault::Capacity,
        Fault::ProcessThenDrop,
    ];
    fake.faults().random(0.2, "/", faults, 20_260_301);

    // Act: eight creates at a time, each for its own provision.
    let outcomes: Vec<(String, Result<_, _>)> = futures::stream::iter(0..CREATES)
        .map(|i| {
            let hetzner = &hetzner;
            async move {
                let provision = format!("npv_fault{i:03}");
                let result = hetzner
                    .create_server(&create_request(&format!("node-{i:03}"), &provision))
                    .await;
                (provision, result)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    // Let delayed requests land before counting.
    tokio::time::sleep(Duration::from_secs(10)).await;
    fake.faults().clear();

    // Assert
    let mut per_provision: BTreeMap<String, usize> = BTreeMap::new();
    for s in fake.servers() {
        *per_provision
            .entry(s.labels["levelrail-provision"].clone())
            .or_default() += 1;
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (provision, result) in &outcomes {
        let created = fake.create_count_by_label("levelrail-provision", provision);
        assert!(created <= 1, "{provision} was created {created} times");
        match result {
            Ok(info) => {
                assert_eq!(info.provision_id.as_deref(), Some(provision.as_str()));
                assert!(
                    fake.servers().iter().any(|s| s.id.to_string() == info.id),
                    "{provision}: the returned server exists"
                );
                *kinds.entry("ok").or_default() += 1;
            }
            Err(e) => {
                assert_ne!(
                    e.kind,
                    ErrorKind::Other,
                    "{provision}: unclassified error {e}"
                );
                *kinds.entry(e.kind.as_str()).or_default() += 1;
            }
        }
    }
    assert!(
        per_provision.values().all(|n| *n == 1),
        "duplicates: {per_provision:?}"
    );
    let faulted = fake
        .request_log()
        .iter()
        .filter(|r| r.status.is_none() || r.status.is_some_and(|s| s >= 412))
        .count();
    println!("outcomes: {kinds:?}; faulted calls: {faulted}");
    assert!(
        kinds.get("ok").copied().unwrap_or_default() >= CREATES * 3 / 4,
        "most creates recover: {kinds:?}"
    );
}
