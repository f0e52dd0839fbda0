//! Booting servers are polled per cloud, in rounds of one provider call: the calls a cloud
//! receives do not grow with the provisions in flight, every server is still seen soon
//! after its create, and a server a batch did not find is read alone before its provision
//! fails. Creates take turns per cloud.
use std::time::Duration;

use super::harness::Harness;
use crate::app::WorkflowTuning;
use crate::model::provision::ProvisionStatus;

/// Provider calls (polls) during minutes 2–5 with `n` provisions booting, the servers read
/// in batches of 50.
async fn polls_with(n: usize) -> (usize, Harness) {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    h.fake.set_poll_batch(50);
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(h.provision(&format!("node-{i}")).await.id);
    }
    for id in &ids {
        h.wait_for(id, |p| p.status == ProvisionStatus::Booting)
            .await;
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    let before = h.fake.calls("poll_servers") + h.fake.calls("get_server");
    tokio::time::sleep(Duration::from_secs(180)).await;
    let after = h.fake.calls("poll_servers") + h.fake.calls("get_server");
    (after - before, h)
}

#[tokio::test(start_paused = true)]
async fn provider_calls_do_not_grow_with_the_provisions_in_flight() {
    let (one, _) = polls_with(1).await;
    let (many, h) = polls_with(400).await;

    // 15 s apart once backed off: 12 calls in 3 minutes, however many servers boot.
    assert!(
        (10..=14).contains(&one),
        "{one} polls of one booting server"
    );
    assert!(
        many <= 2 * one,
        "{many} polls with 400 in flight, {one} with 1"
    );
    // Every server was seen, and none read alone.
    let polls = h.fake.polls();
    assert_eq!(polls.len(), 400);
    assert!(polls.iter().all(|(_, n)| *n >= 1), "a server never polled");
    assert_eq!(h.fake.calls("get_server"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_server_a_batch_does_not_find_is_read_alone_then_fails_its_provision() {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    h.fake.set_poll_batch(50);
    let kept = h.provision("kept").await;
    let lost = h.provision("lost").await;
    h.wait_for(&lost.id, |p| p.status == ProvisionStatus::Booting)
        .await;

    h.fake.remove_servers(lost.id.as_str());
    let failed = h.finish(&lost.id).await;

    assert_eq!(failed.failed_phase, Some(ProvisionStatus::Booting));
    let reason = failed.failure_reason.unwrap_or_default();
    assert!(reason.contains("the server no longer exists"), "{reason}");
    assert!(
        h.fake.calls("get_server") >= 1,
        "the absence was not confirmed"
    );
    let kept = h.provisioner.get_provision(&kept.id).await.expect("kept");
    assert_eq!(kept.status, ProvisionStatus::Booting);
}

#[tokio::test(start_paused = true)]
async fn servers_a_batch_does_not_find_are_read_alone_a_few_per_round() {
    // Arrange: 10 servers booting, which the batch call never shows.
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    h.fake.set_poll_batch(50);
    h.fake.set_batch_finds_none();
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(h.provision(&format!("node-{i}")).await.id);
    }
    for id in &ids {
        h.wait_for(id, |p| p.status == ProvisionStatus::Booting)
            .await;
    }

    // Act
    tokio::time::sleep(Duration::from_secs(60)).await;

    // Assert: each round read at most 4 alone, and every server was read.
    let (rounds, alone) = (h.fake.calls("poll_servers"), h.fake.calls("get_server"));
    assert!(
        rounds >= 3 && alone <= 4 * rounds,
        "{alone} reads alone in {rounds} rounds"
    );
    let polls = h.fake.polls();
    assert_eq!(polls.len(), 10);
    assert!(
        polls.iter().all(|(_, n)| *n >= 1),
        "a server never read: {polls:?}"
    );
    for id in &ids {
        let p = h.provisioner.get_provision(id).await.expect("read");
        assert_eq!(p.status, ProvisionStatus::Booting, "{id}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_accepted_at_once_and_creates_take_turns() {
    let tuning = WorkflowTuning {
        creates_per_cloud: 3,
        ..WorkflowTuning::default()
    };
    let h = Harness::with_tuning(None, tuning);
    h.fake.set_create_delay(Duration::from_secs(2));
    let mut ids = Vec::new();
    for i in 0..12 {
        let p = h.provision(&format!("burst-{i}")).await;
        assert_eq!(p.status, ProvisionStatus::Creating);
        ids.push(p.id);
    }
    for id in &ids {
        h.wait_for(id, |p| p.status == ProvisionStatus::Booting)
            .await;
    }
    assert_eq!(h.fake.most_creates_at_once(), 3, "creates at once");
    assert_eq!(h.fake.calls("create_server"), 12);
}
