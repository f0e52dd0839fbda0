//! Conformance of leases: exactly one owner drives a provision; an expired lease moves to
//! the next taker; terminal provisions are neither leased nor resumable.
use std::sync::Arc;

use time::Duration;
use tokio::task::JoinSet;

use super::fixtures::{OWNER, T0, record};
use crate::model::ports::{ProvisionStore, ProvisionerStore};
use crate::model::provision::ProvisionStatus;
use crate::model::stored_time;

/// Concurrent lease takers.
const TAKERS: usize = 16;

pub(super) async fn run(store: Arc<dyn ProvisionerStore>) {
    one_of_many_concurrent_takers_gets_a_free_lease(Arc::clone(&store)).await;
    a_lease_is_renewed_by_its_owner_and_taken_over_only_after_it_expires(&*store).await;
    a_stale_owner_cannot_write_after_a_take_over(&*store).await;
    an_owner_renews_its_live_leases_in_one_write(&*store).await;
    only_unleased_provisions_in_flight_are_resumable(&*store).await;
}

async fn an_owner_renews_its_live_leases_in_one_write(store: &dyn ProvisionerStore) {
    let (ttl, later) = (Duration::seconds(30), T0 + Duration::seconds(20));
    let ours = store
        .insert_provision(&record("renew-ours", T0))
        .await
        .expect("insert");
    let lapsed = store
        .insert_provision(&record("renew-lapsed", T0))
        .await
        .expect("insert");
    let taken = store
        .insert_provision(&record("renew-taken", T0))
        .await
        .expect("insert");
    let not_asked = store
        .insert_provision(&record("renew-not-asked", T0))
        .await
        .expect("insert");
    for r in [&ours, &not_asked] {
        store
            .acquire_lease(&r.id, OWNER, T0, T0 + ttl)
            .await
            .expect("acquire");
    }
    store
        .acquire_lease(&lapsed.id, OWNER, T0, T0 + Duration::seconds(10))
        .await
        .expect("acquire");
    store
        .release_lease(&taken.id, OWNER)
        .await
        .expect("release");
    let other = store
        .acquire_lease(&taken.id, "replica-other", T0, T0 + ttl)
        .await
        .expect("acquire")
        .expect("free");

    let ids = [ours.id.clone(), lapsed.id.clone(), taken.id.clone()];
    let renewed = store
        .renew_leases(OWNER, &ids, later, later + ttl)
        .await
        .expect("renew");

    let epoch = store
        .get_provision(&ours.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        renewed,
        vec![(ours.id.clone(), epoch.lease_epoch)],
        "only the live lease of the owner is renewed, with its epoch kept"
    );
    assert_eq!(epoch.lease_until, stored_time(later + ttl).ok());
    let untouched = store
        .get_provision(&not_asked.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        untouched.lease_until,
        stored_time(T0 + ttl).ok(),
        "a provision not asked for"
    );
    let theirs = store
        .get_provision(&taken.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        (
            theirs.lease_owner.as_deref(),
            theirs.lease_epoch,
            theirs.lease_until
        ),
        (Some("replica-other"), other, stored_time(T0 + ttl).ok()),
        "another owner's lease is left alone"
    );
    assert!(
        store
            .renew_leases(OWNER, &[], later, later + ttl)
            .await
            .expect("renew")
            .is_empty()
    );
}

async fn one_of_many_concurrent_takers_gets_a_free_lease(store: Arc<dyn ProvisionerStore>) {
    let r = store
        .insert_provision(&record("lease-race", T0))
        .await
        .expect("insert");
    store.release_lease(&r.id, OWNER).await.expect("release");
    let mut takers = JoinSet::new();
    for i in 0..TAKERS {
        let (store, id) = (Arc::clone(&store), r.id.clone());
        takers.spawn(async move {
            let owner = format!("replica-{i}");
            let won = store
                .acquire_lease(&id, &owner, T0, T0 + Duration::seconds(30))
                .await
                .expect("acquire");
            won.map(|epoch| (owner, epoch))
        });
    }

    let winners: Vec<(String, u64)> = takers.join_all().await.into_iter().flatten().collect();

    assert_eq!(winners.len(), 1, "lease winners: {winners:?}");
    let got = store.get_provision(&r.id).await.expect("get").expect("row");
    assert_eq!(
        got.lease_owner.as_ref(),
        Some(&winners[0].0),
        "the stored owner is not the winner"
    );
    assert_eq!(
        got.lease_epoch, winners[0].1,
        "the epoch returned is not stored"
    );
    assert_eq!(
        got.lease_epoch,
        r.lease_epoch + 2,
        "a release and a take did not each bump the epoch"
    );
    assert_eq!(
        got.generation, r.generation,
        "taking a lease bumped the generation"
    );
}

async fn a_lease_is_renewed_by_its_owner_and_taken_over_only_after_it_expires(
    store: &dyn ProvisionStore,
) {
    let r = store
        .insert_provision(&record("lease-expiry", T0))
        .await
        .expect("insert");
    let until = r
        .lease_until
        .expect("a new provision is leased to its creator");
    let before = until - Duration::seconds(1);

    let stolen = store
        .acquire_lease(&r.id, "replica-b", before, before + Duration::minutes(1))
        .await
        .expect("b");
    let renewed = store
        .acquire_lease(&r.id, OWNER, before, until + Duration::minutes(1))
        .await
        .expect("renew");
    let late = until + Duration::minutes(1) + Duration::seconds(1);
    let taken = store
        .acquire_lease(&r.id, "replica-b", late, late + Duration::minutes(1))
        .await
        .expect("take");
    let old_owner = store
        .acquire_lease(&r.id, OWNER, late, late + Duration::minutes(1))
        .await
        .expect("old");

    assert_eq!(stolen, None, "a live lease was taken by another owner");
    assert_eq!(
        renewed,
        Some(r.lease_epoch),
        "the owner could not renew its lease, or renewing changed its epoch"
    );
    assert_eq!(
        taken,
        Some(r.lease_epoch + 1),
        "an expired lease could not be taken over, or the take-over kept the epoch"
    );
    assert_eq!(
        old_owner, None,
        "the previous owner got its lease back while another holds it"
    );
    let later = late + Duration::minutes(2);
    let back = store
        .acquire_lease(&r.id, "replica-b", later, later + Duration::minutes(1))
        .await
        .expect("retake");
    assert_eq!(
        back,
        Some(r.lease_epoch + 2),
        "its holder taking an expired lease back kept the epoch"
    );
    let mut done = store.get_provision(&r.id).await.expect("get").expect("row");
    done.status = ProvisionStatus::Ready;
    store
        .update_provision(&done)
        .await
        .expect("update")
        .expect("applied");
    let terminal = store
        .acquire_lease(&r.id, "replica-c", late, late + Duration::hours(1))
        .await
        .expect("c");
    assert_eq!(terminal, None, "a terminal provision was leased");
}

/// Fencing: a driver that lost its lease (paused past its expiry, say) cannot write the row
/// once another took it over, even before the new holder wrote anything; the new holder
/// can.
async fn a_stale_owner_cannot_write_after_a_take_over(store: &dyn ProvisionStore) {
    let r = store
        .insert_provision(&record("lease-fence", T0))
        .await
        .expect("insert");
    let late = r.lease_until.expect("leased") + Duration::seconds(1);
    let old = store.get_provision(&r.id).await.expect("get").expect("row");
    let epoch = store
        .acquire_lease(&r.id, "replica-b", late, late + Duration::minutes(1))
        .await
        .expect("take")
        .expect("the expired lease is taken over");

    let mut stale = old.clone();
    stale.provider_server_id = Some("server-of-the-old-owner".into());
    let refused = store.update_provision(&stale).await.expect("stale write");
    let mut current = store.get_provision(&r.id).await.expect("get").expect("row");
    current.provider_server_id = Some("server-of-the-new-owner".into());
    let applied = store.update_provision(&current).await.expect("new write");

    assert!(refused.is_none(), "the old owner wrote after a take-over");
    assert_eq!(current.lease_epoch, epoch);
    let applied = applied.expect("the new owner's write is refused");
    assert_eq!(applied.lease_epoch, epoch, "a write changed the epoch");
    assert_eq!(
        applied.provider_server_id.as_deref(),
        Some("server-of-the-new-owner")
    );
}

async fn only_unleased_provisions_in_flight_are_resumable(store: &dyn ProvisionStore) {
    let far = T0 + Duration::days(3650);
    let leased = store
        .insert_provision(&record("resume-leased", far))
        .await
        .expect("insert");
    let free = store
        .insert_provision(&record("resume-free", far))
        .await
        .expect("insert");
    store.release_lease(&free.id, OWNER).await.expect("release");
    let expired = store
        .insert_provision(&record("resume-expired", far - Duration::hours(1)))
        .await
        .expect("insert");
    let over = store
        .insert_provision(&record("resume-over", far))
        .await
        .expect("insert");
    store.release_lease(&over.id, OWNER).await.expect("release");
    // Leases at the times this test names (an inserted one may run on the database's
    // clock instead).
    for (r, until) in [
        (&leased, far + Duration::minutes(1)),
        (&expired, far - Duration::minutes(59)),
    ] {
        store
            .acquire_lease(&r.id, OWNER, until - Duration::minutes(1), until)
            .await
            .expect("acquire")
            .expect("ours");
    }
    // The release bumped the epoch: the write is of the row as it is now.
    let mut over = store
        .get_provision(&over.id)
        .await
        .expect("get")
        .expect("row");
    over.status = ProvisionStatus::Failed;
    store
        .update_provision(&over)
        .await
        .expect("update")
        .expect("applied");

    let ids = store.list_resumable(far).await.expect("resumable");

    assert!(ids.contains(&free.id), "a free provision is not resumable");
    assert!(
        ids.contains(&expired.id),
        "an expired lease is not resumable"
    );
    assert!(!ids.contains(&leased.id), "a leased provision is resumable");
    assert!(!ids.contains(&over.id), "a failed provision is resumable");
}
