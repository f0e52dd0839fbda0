//! The status engine seen from watchers: the current state first, then every change, the
//! end after a terminal state, and one driver for any number of watchers.
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::harness::{Harness, NAME};
use crate::model::provision::ProvisionStatus;

#[tokio::test(start_paused = true)]
async fn a_watch_sends_the_current_state_first_then_each_change_and_ends_after_the_terminal_one() {
    let h = Harness::new();
    let p = h.provision(NAME).await;
    let mut watch = h.provisioner.watch_provision(&p.id).await.expect("watch");
    let booter = {
        let h = Arc::new(h);
        let (h2, id) = (Arc::clone(&h), p.id.clone());
        (h, tokio::spawn(async move { h2.complete(&id, NAME).await }))
    };

    let mut seen = Vec::new();
    while let Some(state) = watch.next().await {
        seen.push(state);
    }

    booter.1.await.expect("booted");
    let first = seen.first().expect("a first state");
    assert_eq!(first.id, p.id);
    assert!(
        seen.windows(2).all(|w| w[0].generation < w[1].generation),
        "generations do not increase"
    );
    let statuses: Vec<_> = seen.iter().map(|s| s.status).collect();
    assert!(
        statuses.windows(2).all(|w| w[0] <= w[1]),
        "statuses went back: {statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&ProvisionStatus::Ready));
    for status in [
        ProvisionStatus::Booting,
        ProvisionStatus::Installing,
        ProvisionStatus::Ready,
    ] {
        assert!(
            statuses.contains(&status),
            "{status:?} was not streamed: {statuses:?}"
        );
    }
    assert!(
        watch.next().await.is_none(),
        "the stream did not end after ready"
    );
}

#[tokio::test(start_paused = true)]
async fn watching_a_finished_provision_sends_it_once_and_ends() {
    let h = Harness::new();
    h.fake.fail_next(
        "create_server",
        1,
        levelrail_clouds::ErrorKind::Unauthorized,
        "unauthorized",
    );
    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    let mut watch = h.provisioner.watch_provision(&p.id).await.expect("watch");

    assert_eq!(watch.next().await, Some(failed));
    assert_eq!(watch.next().await, None);
}

/// Provider calls for a provision watched by `watchers` streams, start to `ready`.
async fn provider_calls_with(watchers: usize) -> usize {
    let h = Arc::new(Harness::new());
    let p = h.provision(NAME).await;
    let mut streams = JoinSet::new();
    for _ in 0..watchers {
        let mut watch = h.provisioner.watch_provision(&p.id).await.expect("watch");
        streams.spawn(async move {
            let mut last = None;
            while let Some(state) = watch.next().await {
                last = Some(state.status);
            }
            last
        });
    }

    h.complete(&p.id, NAME).await;
    let ends = streams.join_all().await;

    assert!(
        ends.iter().all(|s| *s == Some(ProvisionStatus::Ready)),
        "a watcher missed ready"
    );
    h.settle().await;
    assert_eq!(
        h.events.watched(),
        0,
        "a watch channel outlived its watchers"
    );
    h.fake.total_calls()
}

#[tokio::test(start_paused = true)]
async fn a_thousand_watchers_cost_no_more_provider_calls_than_one() {
    let one = provider_calls_with(1).await;
    let thousand = provider_calls_with(1_000).await;

    assert_eq!(thousand, one, "watchers caused provider calls");
    assert!(one <= 6, "{one} provider calls for one provision");
}

#[tokio::test(start_paused = true)]
async fn a_watcher_on_a_replica_that_does_not_drive_the_provision_sees_it_through_the_store() {
    let driving = Arc::new(Harness::new());
    let other = driving.restart(None);
    let p = driving.provision(NAME).await;
    let mut watch = other
        .provisioner
        .watch_provision(&p.id)
        .await
        .expect("watch");
    let booter = {
        let (h, id) = (Arc::clone(&driving), p.id.clone());
        tokio::spawn(async move { h.complete(&id, NAME).await })
    };

    let mut last = None;
    while let Some(state) = watch.next().await {
        last = Some(state);
    }

    booter.await.expect("booted");
    assert_eq!(last.map(|s| s.status), Some(ProvisionStatus::Ready));
    assert_eq!(
        driving.fake.calls("get_server"),
        2,
        "the watching replica polled the provider"
    );
}

#[tokio::test(start_paused = true)]
async fn a_replica_refreshes_what_it_watches_for_other_replicas_in_one_batched_read_per_tick() {
    // Arrange: 40 provisions driven by one replica, all staying booting, each watched on
    // another replica.
    let memory = Arc::new(crate::store::MemoryStore::new());
    let driving = Harness::on_memory(
        Arc::clone(&memory),
        None,
        crate::app::WorkflowTuning::default(),
    );
    let other = driving.restart(None);
    driving.fake.set_running_after(u32::MAX);
    let mut watches = Vec::new();
    for i in 0..40 {
        let p = driving.provision(&format!("batch-{i}")).await;
        let mut watch = other
            .provisioner
            .watch_provision(&p.id)
            .await
            .expect("watch");
        watch.next().await.expect("the current state");
        watches.push((p.id, watch));
    }
    let before = memory.batched_reads();

    // Act: ten follow intervals; then one provision is cancelled on the driving replica.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let reads = memory.batched_reads() - before;
    let (id, watch) = &mut watches[7];
    driving
        .provisioner
        .cancel_provision(id)
        .await
        .expect("cancel");
    let mut last = None;
    while let Some(state) = watch.next().await {
        last = Some(state.status);
    }

    // Assert: two queries (32 + 8 provisions) per interval, not 40; the watcher on the
    // other replica still saw the cancelled provision end.
    assert!(
        (18..=22).contains(&reads),
        "{reads} reads in ten intervals for 40 watched provisions"
    );
    assert_eq!(last, Some(ProvisionStatus::Failed));
}
