//! Crash safety: the driver stops dead after each step (state persisted, lease held, as
//! with SIGKILL), a new process on the same database resumes once the lease expires, and
//! the provision finishes with exactly one server.
use std::time::Duration;

use super::harness::{Harness, NAME, ScriptedHook};
use crate::app::workflow::hooks::{HookAction, HookPoint};
use crate::model::provision::{ProvisionStatus, SagaStep};

/// Waits (in paused time) until `hook` crashed the driver of `id` at `point`.
async fn until_crashed(
    h: &Harness,
    id: &crate::model::provision::ProvisionId,
    hook: &ScriptedHook,
    point: HookPoint,
) {
    for _ in 0..1_000 {
        if hook.fired(point) && !h.events.is_driving(id.as_str()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{point:?}: the driver of {id} did not crash there");
}

#[tokio::test(start_paused = true)]
async fn a_crash_after_any_step_resumes_with_exactly_one_server() {
    // The join token is minted with the provision's insert: the driver starts at rendering.
    let points = [
        HookPoint::After(SagaStep::RenderUserData),
        HookPoint::Before(SagaStep::CreateServer),
        HookPoint::AfterCall(SagaStep::CreateServer),
        HookPoint::After(SagaStep::CreateServer),
        HookPoint::After(SagaStep::WaitRunning),
        HookPoint::After(SagaStep::Installing),
    ];
    for point in points {
        // Arrange: the first process dies at `point`.
        let hook = ScriptedHook::once(point, HookAction::Crash);
        let first = Harness::with_hook(Some(hook.clone()));
        let p = first.provision(NAME).await;
        if matches!(point, HookPoint::After(SagaStep::Installing)) {
            first
                .wait_for(&p.id, |p| p.status >= ProvisionStatus::Installing)
                .await;
            first.report_all(&p.id).await;
        }
        until_crashed(&first, &p.id, &hook, point).await;

        // Act: a second process starts after the lease expired and resumes.
        let second = first.restart(None);
        tokio::time::sleep(Duration::from_secs(31)).await;
        let resumed = second
            .provisioner
            .workflow()
            .resume_all()
            .await
            .expect("resume");
        let ready = second.complete(&p.id, NAME).await;

        // Assert
        assert_eq!(resumed, 1, "{point:?}: resumed provisions");
        assert_eq!(ready.status, ProvisionStatus::Ready, "{point:?}: {ready:?}");
        assert_eq!(
            second.fake.created(p.id.as_str()),
            1,
            "{point:?}: servers created"
        );
        assert_eq!(
            second.fake.inventory(p.id.as_str()),
            (1, 1),
            "{point:?}: servers left"
        );
        assert_eq!(second.live_tokens(&p.id).await, 0, "{point:?}: live tokens");
    }
}

#[tokio::test(start_paused = true)]
async fn a_live_lease_keeps_a_second_process_from_driving() {
    let point = HookPoint::After(SagaStep::CreateServer);
    let hook = ScriptedHook::once(point, HookAction::Crash);
    let first = Harness::with_hook(Some(hook.clone()));
    let p = first.provision(NAME).await;
    until_crashed(&first, &p.id, &hook, point).await;
    let second = first.restart(None);

    let early = second
        .provisioner
        .workflow()
        .resume_all()
        .await
        .expect("resume");

    assert_eq!(early, 0, "a provision with a live lease was resumed");
}

#[tokio::test(start_paused = true)]
async fn a_crash_while_unwinding_resumes_the_unwinding() {
    let point = HookPoint::Undo(SagaStep::CreateServer);
    let hook = ScriptedHook::many(&[
        (HookPoint::Before(SagaStep::WaitRunning), HookAction::Fail),
        (point, HookAction::Crash),
    ]);
    let first = Harness::with_hook(Some(hook.clone()));
    let p = first.provision(NAME).await;
    until_crashed(&first, &p.id, &hook, point).await;
    let second = first.restart(None);
    tokio::time::sleep(Duration::from_secs(31)).await;

    second
        .provisioner
        .workflow()
        .resume_all()
        .await
        .expect("resume");
    let failed = second.finish(&p.id).await;

    second.assert_clean_slate(&failed).await;
    assert!(
        failed
            .failure_reason
            .unwrap_or_default()
            .contains("wait_running")
    );
    assert_eq!(
        second.fake.calls("delete_server"),
        2,
        "the interrupted undo was not repeated"
    );
}

#[tokio::test(start_paused = true)]
async fn the_recovery_loop_picks_up_a_provision_once_its_lease_expires() {
    let point = HookPoint::After(SagaStep::RenderUserData);
    let hook = ScriptedHook::once(point, HookAction::Crash);
    let first = Harness::with_hook(Some(hook.clone()));
    let p = first.provision(NAME).await;
    until_crashed(&first, &p.id, &hook, point).await;
    let second = first.restart(None);

    let recovery = second
        .provisioner
        .workflow()
        .spawn_recovery(Duration::from_secs(10));
    let ready = second.complete(&p.id, NAME).await;
    recovery.abort();

    assert_eq!(ready.status, ProvisionStatus::Ready);
    assert_eq!(second.fake.created(p.id.as_str()), 1);
}

/// A provision whose server stays booting (its driver keeps polling the provider), on a
/// store the test can make refuse lease writes.
async fn booting_on_a_failable_store() -> (
    std::sync::Arc<crate::store::MemoryStore>,
    Harness,
    crate::model::provision::Provision,
) {
    let memory = std::sync::Arc::new(crate::store::MemoryStore::new());
    let h = Harness::on_memory(
        std::sync::Arc::clone(&memory),
        None,
        crate::app::WorkflowTuning::default(),
    );
    h.fake.set_running_after(u32::MAX);
    let p = h.provision(NAME).await;
    h.wait_for(&p.id, |p| p.status >= ProvisionStatus::Booting)
        .await;
    (memory, h, p)
}

#[tokio::test(start_paused = true)]
async fn a_driver_whose_lease_renewals_keep_failing_stops_calling_the_provider_before_it_lapses() {
    // Arrange: the server stays booting, so the driver keeps polling the provider.
    let (memory, h, p) = booting_on_a_failable_store().await;

    // Act: the database refuses every lease renewal; the 30 s lease lapses unrenewed.
    memory.fail_lease_writes(true);
    tokio::time::sleep(Duration::from_secs(25)).await;
    let calls_when_stopped = h.fake.total_calls();
    tokio::time::sleep(Duration::from_secs(120)).await;
    let calls_later = h.fake.total_calls();
    memory.fail_lease_writes(false);
    h.fake.set_running_after(0);
    let resumed = h.provisioner.workflow().resume_all().await.expect("resume");
    let ready = h.complete(&p.id, NAME).await;

    // Assert: it stopped within two failed renewals (20 s, a third of the lease left) and
    // made no provider call after; the provision was resumed, not failed.
    assert_eq!(
        calls_later, calls_when_stopped,
        "the driver kept calling the provider without a lease"
    );
    assert_eq!(resumed, 1, "the stopped provision was not resumable");
    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.created(p.id.as_str()), 1, "servers created");
}

#[tokio::test(start_paused = true)]
async fn a_lease_renewal_that_fails_once_is_retried_and_the_driver_carries_on() {
    // Arrange
    let (memory, h, p) = booting_on_a_failable_store().await;

    // Act: lease writes fail for 11.5 s (the next renewal fails), then work again.
    memory.fail_lease_writes(true);
    tokio::time::sleep(Duration::from_millis(11_500)).await;
    memory.fail_lease_writes(false);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let still_driving = h.events.is_driving(p.id.as_str());
    h.fake.set_running_after(0);
    let ready = h.complete(&p.id, NAME).await;

    // Assert: no stop, no resume needed.
    assert!(still_driving, "one failed renewal stopped the driver");
    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.created(p.id.as_str()), 1, "servers created");
}
