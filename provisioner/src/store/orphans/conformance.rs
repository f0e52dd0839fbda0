//! The behaviour every `OrphanStore` backend must show, as one suite run against each. It
//! panics, naming the broken behaviour, on the first deviation.
use time::Duration;
use time::macros::datetime;

use crate::model::ports::OrphanStore;
use crate::model::{Orphan, OrphanId, OrphanReason, OrphanState};
use levelrail_types::ProviderId;

const T0: time::OffsetDateTime = datetime!(2030-01-02 03:04:05.123456789 UTC);
/// `T0` as every backend stores it (microseconds).
const T0_STORED: time::OffsetDateTime = datetime!(2030-01-02 03:04:05.123456 UTC);

/// Runs every behaviour against `store`, which must hold no orphans.
pub async fn run(store: &dyn OrphanStore) {
    starts_empty(store).await;
    orphans_round_trip(store).await;
    a_re_found_server_is_not_recorded_twice(store).await;
    an_orphan_without_a_server_id_is_keyed_by_its_provision(store).await;
    attempts_count_and_a_success_marks_it_deleted(store).await;
    an_adopted_orphan_is_left_alone(store).await;
    lists_are_oldest_first(store).await;
}

fn orphan(server_id: Option<&str>, provision: &str, at: time::OffsetDateTime) -> Orphan {
    Orphan {
        id: OrphanId::generate(),
        provider: ProviderId::Hetzner,
        server_id: server_id.map(str::to_owned),
        provision_id: provision.into(),
        node_name: "web-1".into(),
        region: "fsn1".into(),
        reason: OrphanReason::UndoGaveUp,
        first_seen: at,
        attempts: 0,
        last_error: Some("could not delete the server: 'quoted'; DROP TABLE orphans".into()),
        state: OrphanState::Pending,
        updated_at: at,
    }
}

async fn starts_empty(store: &dyn OrphanStore) {
    assert!(
        store.list_orphans().await.expect("list").is_empty(),
        "orphans in a fresh store"
    );
    let missing = store.get_orphan(&OrphanId::generate()).await.expect("get");
    assert!(missing.is_none(), "a fresh store has an orphan");
}

async fn orphans_round_trip(store: &dyn OrphanStore) {
    let o = orphan(Some("srv-round-trip"), "npv_round", T0);

    let stored = store.record_orphan(&o).await.expect("record");
    let got = store.get_orphan(&o.id).await.expect("get").expect("stored");

    assert_eq!(
        got, stored,
        "the stored orphan differs from the returned one"
    );
    let expected = Orphan {
        first_seen: T0_STORED,
        updated_at: T0_STORED,
        ..o
    };
    assert_eq!(
        got, expected,
        "the orphan did not round-trip (to the microsecond)"
    );
}

async fn a_re_found_server_is_not_recorded_twice(store: &dyn OrphanStore) {
    let first = store
        .record_orphan(&orphan(Some("srv-twice"), "npv_twice", T0))
        .await
        .expect("record");
    let again = orphan(Some("srv-twice"), "npv_twice", T0 + Duration::hours(1));

    let second = store.record_orphan(&again).await.expect("record again");

    assert_eq!(
        second, first,
        "a re-found server got a second row or a new first_seen"
    );
    let other_cloud = Orphan {
        provider: ProviderId::Aws,
        ..orphan(Some("srv-twice"), "npv_twice", T0)
    };
    let third = store.record_orphan(&other_cloud).await.expect("record");
    assert_ne!(
        third.id, first.id,
        "the same server id at another cloud is another server"
    );

    store
        .record_orphan_attempt(&first.id, OrphanState::Pending, T0, None)
        .await
        .expect("attempt")
        .expect("pending");
    let revived = store.record_orphan(&again).await.expect("record again");
    assert_eq!(revived.id, first.id);
    assert_eq!(
        revived.state,
        OrphanState::Pending,
        "a deleted server that shows up again is pending again"
    );
}

async fn an_orphan_without_a_server_id_is_keyed_by_its_provision(store: &dyn OrphanStore) {
    let first = store
        .record_orphan(&orphan(None, "npv_no_server", T0))
        .await
        .expect("record");

    let second = store
        .record_orphan(&orphan(None, "npv_no_server", T0))
        .await
        .expect("record again");
    let other = store
        .record_orphan(&orphan(None, "npv_another", T0))
        .await
        .expect("record another");

    assert_eq!(
        second.id, first.id,
        "a provision's server-less orphan is recorded twice"
    );
    assert_eq!(first.server_id, None);
    assert_ne!(other.id, first.id, "two provisions share one orphan");
}

async fn attempts_count_and_a_success_marks_it_deleted(store: &dyn OrphanStore) {
    let o = store
        .record_orphan(&orphan(Some("srv-attempts"), "npv_attempts", T0))
        .await
        .expect("record");
    let later = T0 + Duration::minutes(5);

    let failed = store
        .record_orphan_attempt(&o.id, OrphanState::Pending, later, Some("rate limited"))
        .await
        .expect("attempt")
        .expect("pending");
    let done = store
        .record_orphan_attempt(&o.id, OrphanState::Pending, later, None)
        .await
        .expect("attempt")
        .expect("pending");
    let stale = store
        .record_orphan_attempt(&o.id, OrphanState::Pending, later, Some("late"))
        .await
        .expect("attempt");

    assert_eq!(failed.attempts, 1);
    assert_eq!(failed.last_error.as_deref(), Some("rate limited"));
    assert_eq!(failed.state, OrphanState::Pending);
    assert_eq!(done.attempts, 2);
    assert_eq!(done.state, OrphanState::Deleted);
    assert_eq!(
        done.last_error.as_deref(),
        Some("rate limited"),
        "the last error is kept"
    );
    assert_eq!(done.updated_at, T0_STORED + Duration::minutes(5));
    assert!(
        stale.is_none(),
        "an attempt counted on an orphan that left `pending`"
    );
}

async fn an_adopted_orphan_is_left_alone(store: &dyn OrphanStore) {
    let o = store
        .record_orphan(&orphan(Some("srv-adopt"), "npv_adopt", T0))
        .await
        .expect("record");

    let adopted = store.adopt_orphan(&o.id, T0).await.expect("adopt");
    let twice = store.adopt_orphan(&o.id, T0).await.expect("adopt again");
    let attempt = store
        .record_orphan_attempt(&o.id, OrphanState::Pending, T0, None)
        .await
        .expect("attempt");
    let re_found = store
        .record_orphan(&orphan(Some("srv-adopt"), "npv_adopt", T0))
        .await
        .expect("record again");

    assert_eq!(adopted.map(|o| o.state), Some(OrphanState::Adopted));
    assert!(twice.is_none(), "an adopted orphan was adopted again");
    assert!(
        attempt.is_none(),
        "the sweeper could count an attempt on an adopted orphan"
    );
    assert_eq!(
        re_found.state,
        OrphanState::Adopted,
        "a sighting undid the adoption"
    );
    let unknown = store
        .adopt_orphan(&OrphanId::generate(), T0)
        .await
        .expect("adopt unknown");
    assert!(unknown.is_none());
}

async fn lists_are_oldest_first(store: &dyn OrphanStore) {
    let early = orphan(Some("srv-early"), "npv_early", T0 - Duration::days(1));
    store.record_orphan(&early).await.expect("record");

    let listed = store.list_orphans().await.expect("list");

    assert_eq!(
        listed.first().map(|o| &o.id),
        Some(&early.id),
        "not oldest first"
    );
    assert!(
        listed
            .windows(2)
            .all(|w| (w[0].first_seen, &w[0].id) <= (w[1].first_seen, &w[1].id)),
        "not ordered by first_seen, then id"
    );
}
