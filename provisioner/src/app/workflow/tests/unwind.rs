//! Failures: one injected at every step unwinds to a clean slate, every undo can run twice,
//! timeouts and cancels delete the server, and `keep_on_failure` keeps it.
use super::harness::{Harness, NAME, ScriptedHook, input};
use crate::app::workflow::hooks::{HookAction, HookPoint};
use crate::model::provision::{ProvisionError, ProvisionStatus, SagaStep};
use levelrail_clouds::ErrorKind;

/// How a case injects its failure.
enum Inject {
    Hook(SagaStep),
    Fake(fn(&super::fake::FakeProvider)),
}

#[tokio::test(start_paused = true)]
async fn a_failure_at_each_step_unwinds_to_a_clean_slate() {
    // The join token is minted with the provision's insert (no step of the driver fails it).
    let cases: Vec<(&str, Inject, ProvisionStatus, &str)> = vec![
        (
            "render",
            Inject::Hook(SagaStep::RenderUserData),
            ProvisionStatus::Creating,
            "render_user_data",
        ),
        (
            "create",
            Inject::Fake(|f| {
                f.fail_next(
                    "create_server",
                    1,
                    ErrorKind::CapacityUnavailable,
                    "resource_unavailable",
                )
            }),
            ProvisionStatus::Creating,
            "could not create the server: capacity unavailable in fsn1 (resource_unavailable)",
        ),
        (
            "wait_running",
            Inject::Fake(|f| f.fail_next("get_server", 1, ErrorKind::NotFound, "not_found")),
            ProvisionStatus::Booting,
            "the server no longer exists",
        ),
        (
            "installing",
            Inject::Hook(SagaStep::Installing),
            ProvisionStatus::Installing,
            "installing",
        ),
        (
            "enrolling",
            Inject::Hook(SagaStep::Enrolling),
            ProvisionStatus::Enrolling,
            "enrolling",
        ),
    ];
    for (case, inject, phase, reason) in cases {
        // Arrange
        let hook = match inject {
            Inject::Hook(step) => Some(ScriptedHook::once(
                HookPoint::Before(step),
                HookAction::Fail,
            )),
            Inject::Fake(_) => None,
        };
        let h = Harness::with_hook(hook);
        if let Inject::Fake(arm) = inject {
            arm(&h.fake);
        }
        // Act
        let p = h.provision(NAME).await;
        let failed = h.finish(&p.id).await;
        // Assert
        h.assert_clean_slate(&failed).await;
        assert_eq!(failed.failed_phase, Some(phase), "{case}: phase");
        let got = failed.failure_reason.clone().unwrap_or_default();
        assert!(got.contains(reason), "{case}: reason {got:?}");
        assert!(
            !got.contains('{') && !got.contains('\n'),
            "{case}: raw text in {got:?}"
        );
        h.provisioner
            .provision(input(NAME))
            .await
            .unwrap_or_else(|e| panic!("{case}: name not reusable: {e}"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_create_records_the_provider_error_code() {
    let h = Harness::new();
    h.fake.fail_next(
        "create_server",
        1,
        ErrorKind::CapacityUnavailable,
        "resource_unavailable",
    );

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    assert_eq!(
        failed.provider_error_code.as_deref(),
        Some("resource_unavailable")
    );
    assert_eq!(
        h.fake.calls("list_servers"),
        1,
        "the unrecorded create was not looked up"
    );
}

#[tokio::test(start_paused = true)]
async fn every_undo_run_twice_is_harmless() {
    let hook = ScriptedHook::many(&[
        (HookPoint::Before(SagaStep::Installing), HookAction::Fail),
        (HookPoint::Undo(SagaStep::CreateServer), HookAction::Replay),
        (HookPoint::Undo(SagaStep::MintJoinToken), HookAction::Replay),
    ]);
    let h = Harness::with_hook(Some(hook.clone()));

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    assert!(
        hook.fired(HookPoint::Undo(SagaStep::CreateServer))
            && hook.fired(HookPoint::Undo(SagaStep::MintJoinToken))
    );
    h.assert_clean_slate(&failed).await;
    assert_eq!(
        h.fake.calls("delete_server"),
        2,
        "the server undo did not run twice"
    );
    assert!(
        !failed
            .failure_reason
            .unwrap_or_default()
            .contains("cleanup incomplete")
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_provision_deletes_its_server() {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    assert_eq!(
        failed.failure_reason.as_deref(),
        Some("timed out after 20m while booting")
    );
    assert_eq!(failed.failed_phase, Some(ProvisionStatus::Booting));
    h.assert_clean_slate(&failed).await;
    let polls = h.fake.calls("get_server");
    assert!(
        (80..=90).contains(&polls),
        "{polls} polls in 20 minutes: not a 2 s → 15 s backoff"
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_unwinds_and_a_finished_provision_cannot_be_cancelled() {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    let p = h.provision(NAME).await;
    h.wait_for(&p.id, |p| p.status == ProvisionStatus::Booting)
        .await;

    let cancelled = h.provisioner.cancel_provision(&p.id).await.expect("cancel");
    let again = h.provisioner.cancel_provision(&p.id).await;

    assert_eq!(
        cancelled.failure_reason.as_deref(),
        Some("cancelled by operator")
    );
    assert_eq!(cancelled.failed_phase, Some(ProvisionStatus::Booting));
    h.assert_clean_slate(&cancelled).await;
    assert!(
        matches!(again, Err(ProvisionError::FailedPrecondition(_))),
        "{again:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_deletes_the_server_even_when_it_was_to_be_kept() {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    let keep = crate::model::provision::ProvisionInput {
        keep_on_failure: true,
        ..input(NAME)
    };
    let p = h.provisioner.provision(keep).await.expect("provision");
    h.wait_for(&p.id, |p| p.status == ProvisionStatus::Booting)
        .await;

    let cancelled = h.provisioner.cancel_provision(&p.id).await.expect("cancel");

    h.assert_clean_slate(&cancelled).await;
}

#[tokio::test(start_paused = true)]
async fn keep_on_failure_keeps_the_server_but_revokes_the_token_and_frees_the_name() {
    let h = Harness::new();
    h.fake.set_running_after(u32::MAX);
    let keep = crate::model::provision::ProvisionInput {
        keep_on_failure: true,
        ..input(NAME)
    };
    let p = h.provisioner.provision(keep).await.expect("provision");
    h.wait_for(&p.id, |p| p.status == ProvisionStatus::Booting)
        .await;
    h.fake.break_servers(p.id.as_str());

    let failed = h.finish(&p.id).await;

    assert_eq!(
        h.fake.inventory(p.id.as_str()),
        (1, 1),
        "the server was not kept"
    );
    assert_eq!(h.live_tokens(&p.id).await, 0, "the token is live");
    let reason = failed.failure_reason.unwrap_or_default();
    assert!(
        reason.starts_with("the provider reports the server as error"),
        "{reason}"
    );
    assert!(
        reason.ends_with("(the server was kept, as asked)"),
        "{reason}"
    );
    h.provisioner
        .provision(input("web-2"))
        .await
        .expect("other names work");
}
