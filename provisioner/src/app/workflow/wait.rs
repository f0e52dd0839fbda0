//! The waiting steps (`wait_running`, `installing`, `enrolling`): one loop that wakes on a
//! push (enrollment, progress report, cancel), on what the provider's poller read of the
//! server (registered only while it boots or has no address; see `poller.rs`), or on a
//! safety-net timer, and reads what the database says (enrollment, reported install
//! steps, a cancel from another replica).
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use super::calls::code_of;
use super::driver::Driver;
use super::failure::{Failure, StepError};
use super::poller::{Observation, ServerWatch};
use crate::model::provision::{ProvisionStatus, SagaStep};
use crate::model::{InstallReport, InstallStep, NodeId};
use levelrail_clouds::error::clip;
use levelrail_clouds::{PollTarget, ServerState};

/// The saga step that follows a status.
fn step_of(status: ProvisionStatus) -> SagaStep {
    match status {
        ProvisionStatus::Creating | ProvisionStatus::Booting => SagaStep::WaitRunning,
        ProvisionStatus::Installing => SagaStep::Installing,
        ProvisionStatus::Enrolling => SagaStep::Enrolling,
        ProvisionStatus::Ready | ProvisionStatus::Failed => SagaStep::Done,
    }
}

/// The waiting steps a status has passed.
fn passed(status: ProvisionStatus) -> impl Iterator<Item = SagaStep> {
    [
        (ProvisionStatus::Installing, SagaStep::WaitRunning),
        (ProvisionStatus::Enrolling, SagaStep::Installing),
        (ProvisionStatus::Ready, SagaStep::Enrolling),
    ]
    .into_iter()
    .filter(move |(s, _)| status >= *s)
    .map(|(_, step)| step)
}

/// The next observation of the watched server; never, without a watch.
async fn next_observation(watch: Option<&mut ServerWatch>) -> Observation {
    match watch {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

/// What woke a waiting driver.
enum Woke {
    /// A push: an enrollment, a progress report, a cancel, another replica's change.
    Pushed,
    /// The database's safety-net tick.
    Tick,
    /// The provider's poller read the server.
    Server(Observation),
}

impl Driver {
    /// Waits until the saga moves to its next step (`Ok`; `ready` once the node enrolled),
    /// or fails.
    pub(super) async fn wait_for_node(&mut self) -> Result<(), StepError> {
        let tuning = self.cx().config.tuning.clone();
        let entry = self.record.saga_step;
        // The database is read when something was pushed (an enrollment, a progress
        // report, a cancel, a change another replica committed) and every `db_tick` as a
        // safety net, not on every provider poll.
        let mut next_read = Instant::now();
        let mut pushed = true;
        loop {
            if pushed || Instant::now() >= next_read {
                next_read = Instant::now() + tuning.db_tick;
                // One round trip: the row, the reports and the enrollment.
                let joined = self.refresh().await?;
                if self.record.cancel_requested {
                    return Err(Failure::cancelled(self.record.status).into());
                }
                // Each observation that moves the saga ends this step, so every stage is
                // recorded (and hooked) in order even when reports and the enrollment
                // arrive together.
                self.align_step().await?;
                if let Some(joined) = joined {
                    self.observe_progress(&joined.progress).await?;
                    if self.record.saga_step != entry
                        || self.observe_enrollment(joined.enrolled_node).await?
                    {
                        return Ok(());
                    }
                }
                if self.record.saga_step != entry {
                    return Ok(());
                }
            }
            self.skip_silent_install(tuning.install_grace).await?;
            if self.record.saga_step != entry {
                return Ok(());
            }
            self.follow_server();
            let woke = tokio::select! {
                () = self.kick.notified() => Woke::Pushed,
                () = tokio::time::sleep_until(next_read) => Woke::Tick,
                observed = next_observation(self.server_watch.as_mut()) => Woke::Server(observed),
            };
            pushed = matches!(woke, Woke::Pushed);
            if let Woke::Server(observed) = woke {
                self.observe_server(observed).await?;
                if self.record.saga_step != entry {
                    return Ok(());
                }
            }
        }
    }

    /// Registers the server with its provider's poller while it needs polling (see
    /// [`Self::needs_poll`]), and ends the registration once it does not.
    fn follow_server(&mut self) {
        let wanted = self
            .record
            .provider_server_id
            .clone()
            .filter(|_| self.needs_poll());
        match wanted {
            Some(id)
                if self
                    .server_watch
                    .as_ref()
                    .is_some_and(|w| w.server_id() == id) => {}
            Some(id) => {
                let target = PollTarget {
                    server_id: id,
                    provision_id: self.record.id.to_string(),
                };
                let cx = self.cx();
                let watch = cx
                    .pollers
                    .watch(&cx.poll_context(), self.record.provider, target);
                self.server_watch = Some(watch);
            }
            None => self.server_watch = None,
        }
    }

    /// Puts the saga step in line with the status (after a replayed waiting step).
    async fn align_step(&mut self) -> Result<(), StepError> {
        let status = self.record.status;
        if status <= ProvisionStatus::Booting || self.record.saga_step == step_of(status) {
            return Ok(());
        }
        let at = self.stamp();
        self.commit(move |r| {
            for step in passed(status) {
                if !r.saga.is_completed(step) {
                    r.saga.complete(step, at.clone(), &[]);
                }
            }
            r.saga_step = step_of(status);
        })
        .await?;
        Ok(())
    }

    /// The provider is polled while the server has not been seen running, or has no address.
    fn needs_poll(&self) -> bool {
        self.record.provider_server_id.is_some()
            && (self.record.status == ProvisionStatus::Booting || self.record.ip_address.is_none())
    }

    /// `ready` as soon as the provision's token enrolled a node (`enrolled`).
    async fn observe_enrollment(&mut self, enrolled: Option<NodeId>) -> Result<bool, StepError> {
        let Some(node_id) = enrolled.filter(|_| self.record.join_token_id.is_some()) else {
            return Ok(false);
        };
        if self.record.status < ProvisionStatus::Enrolling {
            // The agent enrolled before its start was reported (it is quick, and the report
            // is refused once the node is ready): it went through `enrolling` all the same.
            let at = self.stamp();
            self.commit(move |r| {
                for step in passed(ProvisionStatus::Enrolling) {
                    if !r.saga.is_completed(step) {
                        r.saga.complete(step, at.clone(), &[("via", "enrollment")]);
                    }
                }
                r.status = ProvisionStatus::Enrolling;
                r.saga_step = SagaStep::Enrolling;
            })
            .await?;
        }
        let at = self.stamp();
        self.commit(move |r| {
            for step in passed(ProvisionStatus::Ready) {
                if !r.saga.is_completed(step) {
                    r.saga.complete(step, at.clone(), &[]);
                }
            }
            r.saga.complete(
                SagaStep::Enrolling,
                at.clone(),
                &[("node_id", node_id.as_str())],
            );
            r.node_id = Some(node_id.clone());
            // An enrolled agent has started, whether or not cloud-init's report of it came
            // first: the report races the agent's own enrollment and may be refused.
            r.install_step = Some(InstallStep::AgentStarted);
            r.status = ProvisionStatus::Ready;
            r.saga_step = SagaStep::Done;
        })
        .await?;
        Ok(true)
    }

    /// Follows cloud-init's reports (`steps`): `installing` with the latest step,
    /// `enrolling` once the agent started. A report proves the server runs, so `booting`
    /// is left behind.
    async fn observe_progress(&mut self, steps: &[InstallReport]) -> Result<(), StepError> {
        if let Some(failed) = steps.iter().find(|r| r.error.is_some()) {
            let error = failed.error.as_deref().unwrap_or_default();
            let reason = format!("the node reported {} failed: {error}", failed.step.as_str());
            let mut failure = Failure::new(ProvisionStatus::Installing, reason);
            failure.code = Some(format!("{}_failed", failed.step.as_str()));
            return Err(failure.into());
        }
        let Some(latest) = steps.iter().map(|r| r.step).max() else {
            return Ok(());
        };
        if Some(latest) <= self.record.install_step {
            return Ok(());
        }
        let reached = if latest == InstallStep::AgentStarted {
            ProvisionStatus::Enrolling
        } else {
            ProvisionStatus::Installing
        };
        let status = self.record.status.max(reached);
        let at = self.stamp();
        self.commit(move |r| {
            r.install_step = Some(latest);
            for step in passed(status) {
                if !r.saga.is_completed(step) {
                    r.saga.complete(step, at.clone(), &[("via", "progress")]);
                }
            }
            r.status = status;
            r.saga_step = step_of(status);
        })
        .await?;
        Ok(())
    }

    /// What the poller read: running → `installing` (and the address); errored or gone →
    /// failure; a failed read is remembered for a timeout's reason and polled again.
    async fn observe_server(&mut self, observed: Observation) -> Result<(), StepError> {
        let (phase, region) = (self.record.status, self.record.region_in_use());
        let info = match observed {
            Observation::Seen(info) => info,
            Observation::Gone(e) => {
                self.last_poll_code = Some(code_of(&e));
                let failure = Failure::provider(phase, "the server no longer exists", &e, region);
                return Err(failure.into());
            }
            // A refused credential (after one fresh grant), forbidden, a rejected request:
            // polling again cannot help.
            Observation::Refused(e) => {
                self.last_poll_code = Some(code_of(&e));
                let failure = Failure::provider(phase, "could not read the server", &e, region);
                return Err(failure.into());
            }
            Observation::Failed(e) => {
                debug!(provision = %self.record.id, error = %e, "polling the server failed; will retry");
                self.last_poll_code = Some(code_of(&e));
                return Ok(());
            }
        };
        if info.state == ServerState::Failed {
            let state = clip(&info.provider_state);
            let reason = format!("the provider reports the server as {state}");
            let mut failure = Failure::new(self.record.status, reason);
            failure.code = Some(state);
            return Err(failure.into());
        }
        let running = info.state == ServerState::Running;
        let new_ip = info
            .ipv4
            .clone()
            .filter(|ip| Some(ip) != self.record.ip_address.as_ref());
        if !(running && self.record.status == ProvisionStatus::Booting) && new_ip.is_none() {
            return Ok(());
        }
        let at = self.stamp();
        self.commit(move |r| {
            if new_ip.is_some() {
                r.ip_address.clone_from(&new_ip);
            }
            if running && r.status == ProvisionStatus::Booting {
                let ip = r.ip_address.clone().unwrap_or_default();
                let observed = [
                    ("ip", ip.as_str()),
                    ("provider_state", &info.provider_state),
                ];
                r.saga
                    .complete(SagaStep::WaitRunning, at.clone(), &observed);
                r.status = ProvisionStatus::Installing;
                r.saga_step = SagaStep::Installing;
            }
        })
        .await?;
        Ok(())
    }

    /// A server running without any progress report for `grace` (an image without curl, a
    /// blocked progress endpoint) moves on to `enrolling`: only the enrollment matters.
    async fn skip_silent_install(&mut self, grace: Duration) -> Result<(), StepError> {
        if self.record.status != ProvisionStatus::Installing || self.record.install_step.is_some() {
            return Ok(());
        }
        let entered = self
            .record
            .stages
            .iter()
            .rev()
            .find(|s| s.status == ProvisionStatus::Installing)
            .map_or(self.record.updated_at, |s| s.entered_at);
        if self.cx().now() - entered < grace {
            return Ok(());
        }
        let at = self.stamp();
        self.commit(move |r| {
            r.saga
                .complete(SagaStep::Installing, at.clone(), &[("reports", "none")]);
            r.status = ProvisionStatus::Enrolling;
            r.saga_step = SagaStep::Enrolling;
        })
        .await?;
        Ok(())
    }
}
