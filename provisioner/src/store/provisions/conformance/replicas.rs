//! Conformance of what replicas sharing a database rely on: a shared value is the first
//! writer's, and (where the store has a change feed) every state change, cancel and
//! enrollment-visible write is announced; an insert and a lease renewal are not.
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::fixtures::{OWNER, T0, record};
use crate::model::ports::{Change, ChangeFeed, ProvisionerStore};
use crate::model::provision::ProvisionStatus;

/// Concurrent first writers.
const WRITERS: usize = 8;

pub(super) async fn run(store: Arc<dyn ProvisionerStore>) {
    the_first_of_concurrent_writers_sets_a_shared_value(Arc::clone(&store)).await;
    the_change_feed_names_every_changed_provision(&*store).await;
}

async fn the_first_of_concurrent_writers_sets_a_shared_value(store: Arc<dyn ProvisionerStore>) {
    let mut writers = JoinSet::new();
    for i in 0..WRITERS {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            store
                .shared_value("conformance", format!("value-{i}").as_bytes())
                .await
                .expect("shared value")
        });
    }
    let seen = writers.join_all().await;
    assert!(
        seen.iter().all(|v| v == &seen[0]),
        "replicas see different shared values: {seen:?}"
    );
    let again = store
        .shared_value("conformance", b"late")
        .await
        .expect("again");
    assert_eq!(again, seen[0], "a later writer replaced the shared value");
    let bytes: Vec<u8> = (0..=255).collect();
    let stored = store.shared_value("binary", &bytes).await.expect("binary");
    assert_eq!(stored, bytes, "a binary shared value did not round-trip");
}

async fn the_change_feed_names_every_changed_provision(store: &dyn ProvisionerStore) {
    let Some(mut feed) = store.change_feed().await.expect("change feed") else {
        // One process's store: its changes are heard in-process.
        return;
    };
    let inserted = store
        .insert_provision(&record("feed", T0))
        .await
        .expect("insert");
    let id = inserted.id.to_string();
    let change = |cancel_requested| Change {
        provision_id: id.clone(),
        cancel_requested,
    };
    // No other replica drives or follows a provision yet when it is inserted: an insert is
    // not announced (announcing would serialise every `Provision` call's commit).
    assert_eq!(
        next_for(&mut *feed, &id).await,
        None,
        "an insert was announced"
    );

    let mut moved = inserted.clone();
    moved.status = ProvisionStatus::Booting;
    let moved = store
        .update_provision(&moved)
        .await
        .expect("update")
        .expect("current");
    assert_eq!(
        next_for(&mut *feed, &id).await,
        Some(change(false)),
        "a change was not announced"
    );

    let mut cancelled = moved.clone();
    cancelled.cancel_requested = true;
    store
        .update_provision(&cancelled)
        .await
        .expect("update")
        .expect("current");
    assert_eq!(
        next_for(&mut *feed, &id).await,
        Some(change(true)),
        "a cancel was not announced as one"
    );

    // A lease renewal moves no generation: nobody is told.
    store
        .acquire_lease(&inserted.id, OWNER, T0, T0 + time::Duration::seconds(30))
        .await
        .expect("renew");
    assert_eq!(
        next_for(&mut *feed, &id).await,
        None,
        "a lease renewal was announced"
    );
}

/// The next announcement of `id` within a second (others' announcements are skipped: the
/// database may be shared with parallel tests).
async fn next_for(feed: &mut dyn ChangeFeed, id: &str) -> Option<Change> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    loop {
        match tokio::time::timeout_at(deadline, feed.next()).await {
            Ok(Ok(Some(got))) if got.provision_id == id => return Some(got),
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => panic!("the change feed failed: {e}"),
            Err(_) => return None,
        }
    }
}
