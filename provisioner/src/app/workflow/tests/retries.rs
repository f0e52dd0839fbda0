//! Transient failures, expiring grants, undo and cancel: storms of 429/503 on the create and
//! on the polls still reach `ready` with one server; a grant is replaced before it expires
//! and once more when the provider refuses it; an undo retries until it is done or its
//! deadline; a cancel lets the create in flight finish and deletes the server by id.
use std::time::Duration;

use super::harness::{Harness, NAME, ScriptedHook};
use crate::app::workflow::hooks::{HookAction, HookPoint};
use crate::model::provision::{ProvisionError, ProvisionStatus, SagaStep};
use levelrail_clouds::{ErrorKind, ProviderError, ProviderId};

fn refused_grant() -> ProviderError {
    ProviderError::new(
        ProviderId::Hetzner,
        ErrorKind::Unauthorized,
        "unauthorized",
        "token expired",
    )
    .with_status(401)
}

#[tokio::test(start_paused = true)]
async fn a_two_minute_storm_of_429_and_503_on_the_create_still_reaches_ready_with_one_server() {
    let h = Harness::new();
    h.fake.storm(
        "create_server",
        Duration::from_secs(120),
        Duration::from_secs(7),
    );

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.created(p.id.as_str()), 1, "duplicate servers");
    let calls = h.fake.calls("create_server");
    assert!(
        (4..=30).contains(&calls),
        "{calls} create calls in a 2-minute storm: not a capped backoff honouring Retry-After"
    );
}

#[tokio::test(start_paused = true)]
async fn a_two_minute_storm_on_the_polls_still_reaches_ready_with_one_server() {
    let h = Harness::new();
    let p = h.provision(NAME).await;
    h.wait_for(&p.id, |p| p.status == ProvisionStatus::Booting)
        .await;
    h.fake.storm(
        "get_server",
        Duration::from_secs(120),
        Duration::from_secs(5),
    );

    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.created(p.id.as_str()), 1);
}

#[tokio::test(start_paused = true)]
async fn a_create_whose_answer_was_lost_is_retried_and_adopts_the_server() {
    let h = Harness::new();
    h.fake.lose_next_answer("create_server");

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready);
    assert_eq!(h.fake.calls("create_server"), 2);
    assert_eq!(h.fake.created(p.id.as_str()), 1, "a second server was made");
}

#[tokio::test(start_paused = true)]
async fn grants_are_replaced_before_they_expire_so_a_long_saga_never_uses_a_dead_one() {
    let h = Harness::new();
    h.broker.set_grant_life(Duration::from_secs(3));
    h.fake.set_running_after(6);

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(
        h.fake.refused_grants(),
        0,
        "a call went out with an expired grant"
    );
    assert!(
        h.broker.issued() >= h.fake.calls("get_server"),
        "{} grants for {} polls spread over more than 3 s each",
        h.broker.issued(),
        h.fake.calls("get_server")
    );
}

#[tokio::test(start_paused = true)]
async fn a_grant_the_provider_refuses_is_refreshed_once_and_the_call_retried() {
    let clean = Harness::new();
    let p = clean.provision(NAME).await;
    clean.complete(&p.id, NAME).await;
    let h = Harness::new();
    h.fake.fail_next_with("create_server", 1, refused_grant());

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.calls("create_server"), 2);
    assert_eq!(
        h.broker.issued(),
        clean.broker.issued() + 1,
        "not exactly one fresh grant"
    );
}

#[tokio::test(start_paused = true)]
async fn a_grant_refused_again_after_the_refresh_fails_the_provision_and_cleans_up() {
    let h = Harness::new();
    h.fake.fail_next_with("create_server", 2, refused_grant());

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    h.assert_clean_slate(&failed).await;
    let reason = failed.failure_reason.unwrap_or_default();
    assert!(
        reason.contains("the provider refused the stored credential"),
        "{reason}"
    );
    assert_eq!(h.fake.calls("create_server"), 2, "refreshed more than once");
}

#[tokio::test(start_paused = true)]
async fn a_failure_after_the_grant_expired_still_cleans_up() {
    let hook = ScriptedHook::once(HookPoint::Before(SagaStep::Installing), HookAction::Fail);
    let h = Harness::with_hook(Some(hook));
    h.broker.set_grant_life(Duration::from_secs(3));
    h.fake.set_running_after(4);

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    h.assert_clean_slate(&failed).await;
    assert_eq!(h.fake.refused_grants(), 0);
    assert!(
        !failed
            .failure_reason
            .unwrap_or_default()
            .contains("cleanup incomplete")
    );
}

#[tokio::test(start_paused = true)]
async fn an_undo_retries_past_many_failures_until_the_server_is_deleted() {
    let hook = ScriptedHook::once(HookPoint::Before(SagaStep::Installing), HookAction::Fail);
    let h = Harness::with_hook(Some(hook));
    h.fake.fail_next(
        "delete_server",
        40,
        ErrorKind::Unavailable,
        "service_unavailable",
    );

    let p = h.provision(NAME).await;
    let failed = h.finish(&p.id).await;

    h.assert_clean_slate(&failed).await;
    assert_eq!(h.fake.calls("delete_server"), 41);
    assert!(
        !failed
            .failure_reason
            .unwrap_or_default()
            .contains("cleanup incomplete")
    );
}

#[tokio::test(start_paused = true)]
async fn an_undo_that_never_succeeds_gives_up_at_its_deadline_saying_the_cleanup_is_incomplete() {
    let hook = ScriptedHook::once(HookPoint::Before(SagaStep::Installing), HookAction::Fail);
    let h = Harness::with_hook(Some(hook));
    h.fake.fail_next(
        "delete_server",
        usize::MAX,
        ErrorKind::Unavailable,
        "service_unavailable",
    );

    let p = h.provision(NAME).await;
    let started = tokio::time::Instant::now();
    let failed = h.finish(&p.id).await;

    let reason = failed.failure_reason.unwrap_or_default();
    assert!(
        reason.contains("cleanup incomplete: could not delete the server"),
        "{reason}"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(30 * 60) && took < Duration::from_secs(32 * 60),
        "gave up after {took:?}, not at the 30-minute undo deadline"
    );
    assert_eq!(h.live_tokens(&p.id).await, 0, "the token stayed live");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_during_the_create_lets_it_finish_then_deletes_the_server_by_id() {
    let h = Harness::new();
    h.fake.set_create_delay(Duration::from_secs(20));
    let p = h.provision(NAME).await;
    // The create is in flight.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        h.fake.calls("create_server"),
        0,
        "the create already answered"
    );

    let cancelled = h.provisioner.cancel_provision(&p.id).await.expect("cancel");
    let failed = h.finish(&p.id).await;

    assert_eq!(
        cancelled
            .failure_reason
            .as_deref()
            .or(failed.failure_reason.as_deref()),
        Some("cancelled by operator")
    );
    h.assert_clean_slate(&failed).await;
    assert_eq!(
        h.fake.created(p.id.as_str()),
        1,
        "the create was cut midway"
    );
    assert_eq!(
        h.fake.calls("list_servers"),
        0,
        "the server was looked up by label, not deleted by the id its create returned"
    );
}

#[tokio::test(start_paused = true)]
async fn a_database_outage_while_storing_the_token_refuses_the_provision_and_stores_nothing() {
    let memory = std::sync::Arc::new(crate::store::MemoryStore::new());
    let h = Harness::on_memory(
        std::sync::Arc::clone(&memory),
        None,
        crate::app::WorkflowTuning::default(),
    );
    memory.fail_token_writes(1);

    // The token is stored in the provision's own transaction: neither is kept alone.
    let refused = h.provisioner.provision(super::harness::input(NAME)).await;
    let listed = h.provisioner.list_provisions(0, "").await.expect("list");
    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert!(
        matches!(refused, Err(ProvisionError::StoreUnavailable(_))),
        "{refused:?}"
    );
    assert!(listed.provisions.is_empty(), "{:?}", listed.provisions);
    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(h.fake.created(p.id.as_str()), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refused_grant_is_replaced_by_a_new_one_not_the_cached_one() {
    let h = Harness::new();
    h.broker.cache_grants();
    // The catalog check caches a grant; the provider then revokes it.
    let p = h.provision(NAME).await;
    h.fake.revoke_grants_seen();

    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(
        h.fake.refused_grants(),
        1,
        "the revoked grant was used again after the refresh"
    );
}
