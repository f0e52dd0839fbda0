//! Unwinding a failed provision in reverse: the server and its dedicated resources (found
//! by our labels when the create's answer was never recorded), then the join token (every
//! token of the provision, recorded or not). Each undo is idempotent and recorded when
//! done; then the provision becomes `failed`, which releases its name.
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{info, warn};

use super::driver::{Driver, STORE_ATTEMPTS};
use super::events::Stop;
use super::failure::{Failure, Halt, StepError, describe};
use super::hooks::{HookAction, HookPoint};
use crate::model::provision::{FailureNote, ProvisionStatus, SagaStep};
use crate::model::{Orphan, OrphanId, OrphanReason, OrphanState};
use levelrail_clouds::error::clip;
use levelrail_clouds::{CloudProvider, ErrorKind, Ownership, ProviderError};

const SERVER: &str = "create_server";
const TOKEN: &str = "mint_join_token";

/// Deletes what a provision created at the provider: the server `server_id` when known,
/// otherwise every server carrying the provision's labels; then (inside the provider's
/// `delete_provision_resources`) its dedicated firewall and keys, also when no server was
/// ever made. Deleting what is gone succeeds.
pub(crate) async fn delete_provision_resources(
    client: &dyn CloudProvider,
    server_id: Option<&str>,
    ownership: &Ownership,
) -> Result<(), ProviderError> {
    if let Some(id) = server_id {
        return client.delete_provision_resources(Some(id), ownership).await;
    }
    let ours: Vec<_> = client
        .list_servers(&ownership.control_plane)
        .await?
        .into_iter()
        .filter(|s| s.provision_id.as_deref() == Some(ownership.provision_id.as_str()))
        .collect();
    for server in &ours {
        client
            .delete_provision_resources(Some(&server.id), ownership)
            .await?;
    }
    if ours.is_empty() {
        // No server, but a firewall or key may have been made before the create failed.
        client.delete_provision_resources(None, ownership).await?;
    }
    Ok(())
}

impl Driver {
    /// Records the failure and switches the saga to unwinding.
    pub(super) async fn begin_unwind(&mut self, failure: Failure) -> Result<(), Halt> {
        warn!(provision = %self.record.id, phase = failure.phase.as_str(), reason = %failure.reason, "provision failed; unwinding");
        let note = failure.note();
        self.commit(move |r| {
            if r.saga.failure.is_none() {
                r.saga.failure = Some(note.clone());
            }
            r.saga_step = SagaStep::Unwinding;
        })
        .await
    }

    /// Undoes what was done and marks the provision `failed`.
    pub(super) async fn unwind(&mut self) -> Result<(), Halt> {
        let note = self
            .record
            .saga
            .failure
            .clone()
            .unwrap_or_else(|| FailureNote {
                phase: self.record.status.as_str().to_owned(),
                reason: "the provision was interrupted".into(),
                code: None,
                cancelled: false,
            });
        let keep = self.record.keep_on_failure && !note.cancelled;
        let server_done =
            self.record.saga.is_undone(SERVER) || self.record.saga.create_attempts == 0;
        if !server_done && !keep {
            self.undo(SagaStep::CreateServer).await?;
        }
        if !self.record.saga.is_undone(TOKEN) {
            self.undo(SagaStep::MintJoinToken).await?;
        }
        self.finish_failed(&note, keep && !server_done).await
    }

    /// Runs the undo of `step` and records it as done (or as given up, with its reason).
    /// A crash before the record repeats the undo on resume, which is harmless.
    async fn undo(&mut self, step: SagaStep) -> Result<(), Halt> {
        let mut outcome = self.undo_action(step).await?;
        match self.hook(HookPoint::Undo(step)) {
            Err(StepError::Halt(halt)) => return Err(halt),
            Ok(HookAction::Replay) if outcome.is_ok() => {
                outcome = self.undo_action(step).await?;
            }
            _ => {}
        }
        let name = if step == SagaStep::CreateServer {
            SERVER
        } else {
            TOKEN
        };
        self.commit(move |r| {
            if let Err(reason) = &outcome {
                r.saga.cleanup_errors.push(reason.clone());
            }
            r.saga.undone.push(name.to_owned());
        })
        .await
    }

    /// The undo of `step`: `Err` stops the driver (the unwinding resumes later), `Ok(Err)`
    /// gives up with a reason. The token's undo is never given up on: only the store can
    /// refuse it, and a live token must not outlive a failed provision.
    async fn undo_action(&mut self, step: SagaStep) -> Result<Result<(), String>, Halt> {
        if step == SagaStep::CreateServer {
            self.undo_server().await
        } else {
            self.undo_token().await.map(Ok)
        }
    }

    /// The terminal write.
    async fn finish_failed(&mut self, note: &FailureNote, kept: bool) -> Result<(), Halt> {
        let phase = ProvisionStatus::from_name(&note.phase)
            .filter(|p| !p.is_terminal())
            .unwrap_or(self.record.status);
        let mut reason = note.reason.clone();
        if kept {
            reason.push_str(" (the server was kept, as asked)");
        }
        if let Some(first) = self.record.saga.cleanup_errors.first() {
            reason = clip(&format!("{reason}; cleanup incomplete: {first}"));
        }
        let code = note.code.clone();
        self.commit(move |r| {
            r.status = ProvisionStatus::Failed;
            r.failed_phase = Some(phase);
            r.failure_reason = Some(reason.clone());
            r.provider_error_code.clone_from(&code);
            r.sealed_join_token = None;
            r.saga_step = SagaStep::Done;
        })
        .await?;
        info!(provision = %self.record.id, "provision unwound and marked failed");
        Ok(())
    }

    /// Deletes the server and its dedicated resources, retrying (capped backoff, a fresh
    /// grant whenever the old one nears expiry) until it is done or the undo deadline
    /// passes. A refused credential or a rejected request ends it early: what is left is
    /// then the orphan sweeper's.
    /// `Err` when this driver lost the provision to another (which goes on with the undo).
    async fn undo_server(&mut self) -> Result<Result<(), String>, Halt> {
        let tuning = self.cx().config.tuning.clone();
        let deadline = Instant::now() + tuning.undo_deadline;
        let mut retry = 0u32;
        loop {
            if *self.stop.borrow() == Stop::LeaseLost {
                return Err(Halt::LeaseLost);
            }
            let e = match self.delete_server_once().await {
                Ok(()) => return Ok(Ok(())),
                Err(e) => e,
            };
            let reason = format!(
                "could not delete the server: {}",
                describe(&e, self.record.region_in_use())
            );
            retry += 1;
            warn!(provision = %self.record.id, retry, error = %e, "undo of the server failed");
            let hopeless = matches!(e.kind, ErrorKind::Unauthorized | ErrorKind::InvalidRequest);
            if hopeless || Instant::now() >= deadline {
                self.record_orphan(&reason, retry).await;
                return Ok(Err(reason));
            }
            let pause = tuning.retry.pause(retry, e.retry_after);
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
        }
    }

    /// Records what the undo could not delete as an orphan, for the sweeper to retry. A
    /// store that refuses is only logged: the sweeper's listing finds the labelled server.
    async fn record_orphan(&self, reason: &str, attempts: u32) {
        let now = self.cx().now();
        let orphan = Orphan {
            id: OrphanId::generate(),
            provider: self.record.provider,
            server_id: self.record.provider_server_id.clone(),
            provision_id: self.record.id.to_string(),
            node_name: self.record.name.to_string(),
            region: self.record.region_in_use().to_owned(),
            reason: OrphanReason::UndoGaveUp,
            first_seen: now,
            attempts,
            last_error: Some(reason.to_owned()),
            state: OrphanState::Pending,
            updated_at: now,
        };
        match self.cx().orphans.record_orphan(&orphan).await {
            Ok(o) => {
                warn!(provision = %self.record.id, orphan = %o.id, "the undo gave up; the server is recorded as an orphan")
            }
            Err(e) => {
                warn!(provision = %self.record.id, error = %e, "could not record the orphaned server; the sweeper's listing will find it")
            }
        }
    }

    async fn delete_server_once(&mut self) -> Result<(), ProviderError> {
        let server_id = Arc::new(self.record.provider_server_id.clone());
        let ownership = Arc::new(self.ownership());
        // Transient failures are retried by the caller's loop, which keeps the deadline.
        self.call_once("delete_provision_resources", |client| {
            let (server_id, ownership) = (Arc::clone(&server_id), Arc::clone(&ownership));
            async move {
                delete_provision_resources(client.as_ref(), server_id.as_deref(), &ownership).await
            }
        })
        .await
    }

    /// Revokes every live token of the provision; a store that stays down halts the
    /// driver (the unwinding resumes later).
    async fn undo_token(&mut self) -> Result<(), Halt> {
        let nodes = Arc::clone(&self.cx().nodes);
        let mut pause = Duration::from_millis(200);
        for _ in 0..STORE_ATTEMPTS {
            match nodes
                .revoke_join_tokens_for_provision(self.record.id.as_str())
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => {
                    warn!(provision = %self.record.id, error = %e, "could not revoke the join token; retrying");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
            }
        }
        Err(Halt::StoreUnavailable(
            "could not revoke the provision's join token".into(),
        ))
    }
}
