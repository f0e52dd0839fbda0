//! Unwinding a failed provision in reverse: the server and its dedicated resources (found
//! by our labels when the create's answer was never recorded), then the join token (every
//! token of the provision, recorded or not). Each undo is idempotent and recorded when
//! done; then the provision becomes `failed`, which releases its name.
use std::time::Duration;

use tracing::{info, warn};

use super::driver::Driver;
use super::failure::{Failure, Halt, StepError, describe};
use super::hooks::{HookAction, HookPoint};
use crate::domain::provision::{FailureNote, ProvisionStatus, SagaStep};
use crate::providers::error::clip;
use crate::providers::{CloudProvider, Ownership, ProviderError};

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
        let mut outcome = self.undo_action(step).await;
        match self.hook(HookPoint::Undo(step)) {
            Err(StepError::Halt(halt)) => return Err(halt),
            Ok(HookAction::Replay) if outcome.is_ok() => outcome = self.undo_action(step).await,
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

    async fn undo_action(&mut self, step: SagaStep) -> Result<(), String> {
        if step == SagaStep::CreateServer {
            self.undo_server().await
        } else {
            self.undo_token().await
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

    /// Deletes the server and its dedicated resources, retrying with backoff.
    async fn undo_server(&mut self) -> Result<(), String> {
        let attempts = self.shared.config.tuning.undo_attempts.max(1);
        let mut pause = self.shared.config.tuning.undo_backoff;
        let mut last = String::new();
        for attempt in 1..=attempts {
            match self.delete_server_once().await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    last = format!(
                        "could not delete the server: {}",
                        describe(&e, &self.record.region)
                    );
                    warn!(provision = %self.record.id, attempt, error = %e, "undo of the server failed");
                }
            }
            if attempt < attempts {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(60));
            }
        }
        Err(last)
    }

    async fn delete_server_once(&mut self) -> Result<(), ProviderError> {
        let client = self.client().await?;
        let server_id = self.record.provider_server_id.clone();
        delete_provision_resources(client.as_ref(), server_id.as_deref(), &self.ownership()).await
    }

    /// Revokes every live token of the provision.
    async fn undo_token(&mut self) -> Result<(), String> {
        let nodes = std::sync::Arc::clone(&self.shared.nodes);
        nodes
            .revoke_join_tokens_for_provision(self.record.id.as_str())
            .await
            .map(drop)
            .map_err(|e| format!("could not revoke the join token: {e}"))
    }
}
