//! Creates under injected faults: DigitalOcean has no idempotency token and droplet names
//! are not unique, so a lost answer must never turn into a second droplet. 200 creates run
//! with a fifth of all calls failing in every way the fake knows (on a paused clock, so the
//! timeouts and `Retry-After` waits cost no real time).
use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt as _;
use levelrail_clouds::{CloudProvider, ErrorKind};
use levelrail_sim::fakes::Fault;

use crate::digitalocean_support::{
    TOKEN, client, create_request, droplets_per_provision, provision_tag, start_fake,
};

const CREATES: usize = 200;

#[tokio::test(start_paused = true)]
async fn two_hundred_creates_with_a_fifth_of_calls_failing_leave_no_duplicate_droplet() {
    // Arrange
    let fake = start_fake(|c| c.droplet_limit = 1000).await;
    let do_ = client(&fake, TOKEN);
    let faults = vec![
        Fault::RateLimited {
            retry_after_secs: 2,
        },
        Fault::InternalError,
        Fault::Unavailable,
        Fault::Delay(Duration::from_secs(10)), // beyond the client's 5 s timeout
        Fault::DropConnection,
        Fault::Capacity,
        Fault::ProcessThenDrop,
    ];
    fake.faults().random(0.2, "/v2/", faults, 0x5eed_d0d0);
    let provisions: Vec<String> = (0..CREATES).map(|i| format!("npv_fault{i:03}")).collect();

    // Act
    let outcomes: Vec<_> = futures::stream::iter(provisions.iter())
        .map(|p| {
            let do_ = &do_;
            async move { (p.clone(), do_.create_server(&create_request(p)).await) }
        })
        .buffer_unordered(8)
        .collect()
        .await;

    // Assert: one droplet at most per provision, and every failure classified.
    let per_provision = droplets_per_provision(&fake);
    assert!(
        per_provision.values().all(|n| *n == 1),
        "duplicates: {:?}",
        per_provision
            .iter()
            .filter(|(_, n)| **n > 1)
            .collect::<Vec<_>>()
    );
    let mut failed = Vec::new();
    for (provision, outcome) in &outcomes {
        match outcome {
            Ok(info) => {
                let droplet = fake
                    .droplets()
                    .into_iter()
                    .find(|d| d.id.to_string() == info.id);
                assert!(
                    droplet.is_some_and(|d| d.tags.contains(&provision_tag(provision))),
                    "{provision} got its own droplet"
                );
            }
            Err(e) => {
                let expected = [
                    ErrorKind::Unavailable,
                    ErrorKind::RateLimited,
                    ErrorKind::CapacityUnavailable,
                ];
                assert!(
                    expected.contains(&e.kind),
                    "{provision}: unclassified failure {e:?}"
                );
                assert!(
                    !e.code.is_empty() && !e.message.is_empty(),
                    "{provision}: {e:?}"
                );
                failed.push(provision.clone());
            }
        }
    }
    let log = fake.request_log();
    let dropped_creates = log
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/v2/droplets" && r.status.is_none())
        .count();
    assert!(
        dropped_creates > 0,
        "some create answers were lost on the way back"
    );
    assert!(
        failed.len() < CREATES / 4,
        "{} of {CREATES} creates failed",
        failed.len()
    );
    let firewall_names: Vec<String> = fake.firewalls().into_iter().map(|f| f.name).collect();
    let unique: BTreeSet<&String> = firewall_names.iter().collect();
    assert_eq!(
        unique.len(),
        firewall_names.len(),
        "no duplicate firewall either"
    );

    // Act again: the saga retries the failed creates once the faults are gone.
    fake.faults().clear();
    for provision in &failed {
        do_.create_server(&create_request(provision))
            .await
            .expect("a retried create succeeds");
    }

    let per_provision = droplets_per_provision(&fake);
    assert_eq!(per_provision.len(), CREATES);
    assert!(per_provision.values().all(|n| *n == 1));
    assert_eq!(
        fake.firewalls().len(),
        CREATES,
        "every droplet has exactly one firewall"
    );
    assert_eq!(
        fake.keys().len(),
        1,
        "the operator key was uploaded once and reused"
    );
    println!(
        "digitalocean faults: {} calls for {CREATES} creates, {} failed first then adopted or created on retry, {} create answers lost",
        log.len(),
        failed.len(),
        dropped_creates
    );
}
