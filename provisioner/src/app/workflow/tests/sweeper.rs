//! The orphan sweeper on the fake cloud and a paused clock: what an undo gave up on is
//! deleted later; labelled servers of failed provisions wait out the grace; unknown ones
//! are only listed unless the operator opted in; a ready provision's server is never
//! touched.
use std::time::Duration;

use super::harness::{CONTROL_PLANE, Harness, NAME, ScriptedHook};
use crate::app::WorkflowTuning;
use crate::app::workflow::hooks::{HookAction, HookPoint};
use crate::model::provision::{ProvisionId, SagaStep};
use crate::model::{Orphan, OrphanReason, OrphanState};
use levelrail_clouds::ErrorKind;

/// The default grace: twice the bench's 20-minute provision timeout.
const GRACE: Duration = Duration::from_secs(40 * 60);

fn failing_at_install() -> Option<std::sync::Arc<ScriptedHook>> {
    Some(ScriptedHook::once(
        HookPoint::Before(SagaStep::Installing),
        HookAction::Fail,
    ))
}

impl Harness {
    async fn sweep(&self) -> crate::app::workflow::SweepReport {
        self.provisioner.workflow().sweeper().sweep().await
    }

    async fn orphans(&self) -> Vec<Orphan> {
        self.store.list_orphans().await.expect("orphans")
    }

    /// A provision that failed and was cleaned up; its id.
    async fn failed_provision(&self) -> ProvisionId {
        let p = self.provision(NAME).await;
        self.finish(&p.id).await;
        assert_eq!(self.fake.inventory(p.id.as_str()), (0, 0));
        p.id
    }
}

#[tokio::test(start_paused = true)]
async fn an_undo_that_gives_up_leaves_an_orphan_that_the_sweeper_later_deletes() {
    // Arrange: every delete fails until the undo's 30-minute deadline.
    let h = Harness::with_hook(failing_at_install());
    h.fake.fail_next(
        "delete_server",
        usize::MAX,
        ErrorKind::Unavailable,
        "service_unavailable",
    );
    let p = h.provision(NAME).await;
    h.finish(&p.id).await;
    let row = h
        .store
        .get_provision(&p.id)
        .await
        .expect("get")
        .expect("row");
    let orphans = h.orphans().await;
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    let orphan = &orphans[0];
    assert_eq!(orphan.reason, OrphanReason::UndoGaveUp);
    assert_eq!(orphan.state, OrphanState::Pending);
    assert_eq!(orphan.provision_id, p.id.as_str());
    assert_eq!(orphan.server_id, row.provider_server_id);
    assert!(orphan.server_id.is_some(), "the server id was known");
    assert!(
        orphan
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("could not delete")
    );
    assert_eq!(h.fake.inventory(p.id.as_str()).0, 1);

    // Act: the cloud recovers, the sweeper runs: at once (the orphan is backed off after
    // its many failed attempts), and again 16 sweep intervals later.
    h.fake.heal();
    let early = h.sweep().await;
    tokio::time::sleep(Duration::from_secs(16 * 5 * 60)).await;
    let report = h.sweep().await;

    // Assert
    assert_eq!(
        early.deleted, 0,
        "a failing orphan was retried on every sweep: {early:?}"
    );
    assert_eq!(report.deleted, 1, "{report:?}");
    assert_eq!(
        h.fake.inventory(p.id.as_str()),
        (0, 0),
        "the server is still there"
    );
    let after = h.orphans().await;
    assert_eq!(after.len(), 1, "the orphan was recorded twice: {after:?}");
    assert_eq!(after[0].state, OrphanState::Deleted);
}

#[tokio::test(start_paused = true)]
async fn an_undo_refused_as_an_invalid_request_leaves_an_orphan_at_once() {
    let h = Harness::with_hook(failing_at_install());
    h.fake.fail_next(
        "delete_server",
        1,
        ErrorKind::InvalidRequest,
        "invalid_input",
    );

    let p = h.provision(NAME).await;
    let started = tokio::time::Instant::now();
    h.finish(&p.id).await;

    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the undo kept retrying"
    );
    let orphans = h.orphans().await;
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(orphans[0].attempts, 1);
    tokio::time::sleep(Duration::from_secs(5 * 60)).await;
    let report = h.sweep().await;
    assert_eq!(report.deleted, 1, "{report:?}");
    assert_eq!(h.fake.inventory(p.id.as_str()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_labelled_server_of_a_failed_provision_is_deleted_after_the_grace_and_not_before() {
    // Arrange: a server of the failed provision shows up after its undo (a late create).
    let h = Harness::with_hook(failing_at_install());
    let id = h.failed_provision().await;
    h.fake.plant_server(CONTROL_PLANE, id.as_str(), NAME);

    // Act / Assert: within the grace it is left alone and not even recorded.
    tokio::time::sleep(GRACE - Duration::from_secs(60)).await;
    let early = h.sweep().await;
    assert_eq!(early.deleted, 0, "{early:?}");
    assert_eq!(
        h.fake.inventory(id.as_str()).0,
        1,
        "deleted before the grace"
    );
    assert!(h.orphans().await.is_empty());

    // After the grace it is recorded and deleted.
    tokio::time::sleep(Duration::from_secs(120)).await;
    let late = h.sweep().await;
    assert_eq!(late.deleted, 1, "{late:?}");
    assert_eq!(
        h.fake.inventory(id.as_str()).0,
        0,
        "not deleted after the grace"
    );
    let orphans = h.orphans().await;
    assert_eq!(orphans.len(), 1);
    assert_eq!(orphans[0].reason, OrphanReason::FailedProvision);
    assert_eq!(orphans[0].state, OrphanState::Deleted);
    assert_eq!(orphans[0].region, "fsn1");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_labelled_server_is_only_listed() {
    let h = Harness::new();
    let unknown = ProvisionId::generate();
    h.fake
        .plant_server(CONTROL_PLANE, unknown.as_str(), "stray-1");

    h.sweep().await;
    tokio::time::sleep(GRACE * 2).await;
    let report = h.sweep().await;

    assert_eq!(report.deleted, 0, "{report:?}");
    assert_eq!(
        h.fake.inventory(unknown.as_str()).0,
        1,
        "an unknown server was deleted"
    );
    let orphans = h.orphans().await;
    assert_eq!(orphans.len(), 1, "listed twice or not at all: {orphans:?}");
    assert_eq!(orphans[0].reason, OrphanReason::UnknownProvision);
    assert_eq!(orphans[0].state, OrphanState::Pending);
    assert_eq!(orphans[0].node_name, "stray-1");
    assert_eq!(orphans[0].attempts, 0);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_labelled_server_is_deleted_after_the_grace_when_the_operator_opted_in() {
    let tuning = WorkflowTuning {
        sweep_unknown_servers: true,
        ..WorkflowTuning::default()
    };
    let h = Harness::with_tuning(None, tuning);
    let unknown = ProvisionId::generate();
    h.fake
        .plant_server(CONTROL_PLANE, unknown.as_str(), "stray-1");

    let first = h.sweep().await;
    tokio::time::sleep(GRACE + Duration::from_secs(1)).await;
    let later = h.sweep().await;

    assert_eq!(first.deleted, 0, "deleted at its first sighting: {first:?}");
    assert_eq!(later.deleted, 1, "{later:?}");
    assert_eq!(h.fake.inventory(unknown.as_str()).0, 0);
    assert_eq!(h.orphans().await[0].state, OrphanState::Deleted);
}

#[tokio::test(start_paused = true)]
async fn a_ready_provisions_server_and_other_control_planes_servers_are_never_touched() {
    let tuning = WorkflowTuning {
        sweep_unknown_servers: true,
        ..WorkflowTuning::default()
    };
    let h = Harness::with_tuning(None, tuning);
    let p = h.provision(NAME).await;
    h.complete(&p.id, NAME).await;
    let foreign = ProvisionId::generate();
    h.fake
        .plant_server("cp-someone-else", foreign.as_str(), "theirs");

    h.sweep().await;
    tokio::time::sleep(GRACE * 2).await;
    let report = h.sweep().await;

    assert_eq!(report, Default::default());
    assert_eq!(
        h.fake.inventory(p.id.as_str()),
        (1, 1),
        "the ready node's server was touched"
    );
    assert_eq!(h.fake.inventory(foreign.as_str()).0, 1);
    assert!(h.orphans().await.is_empty(), "{:?}", h.orphans().await);
    assert_eq!(h.fake.calls("delete_server"), 0);
}
