//! One provision's driver: takes the lease (renewed with every other lease of this
//! process, see `leases.rs`), runs the forward steps against the timeout and the operator's
//! cancel, unwinds on failure, and commits every change conditionally on the row's
//! generation (publishing it to watchers).
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tracing::{debug, info, warn};
use zeroize::Zeroizing;

use super::events::{DriverSignals, Stop, Tenure};
use super::failure::{Failure, Halt, StepError};
use super::hooks::{HookAction, HookPoint};
use super::poller::ServerWatch;
use super::{Shared, StepContext, leases};
use crate::model::provision::ProvisionRecord;
use crate::model::provision::{Provision, ProvisionId, SagaStep, StageTiming};
use crate::model::{InstallReport, NodeId};
use levelrail_clouds::registry::LeasedClient;

/// Store errors tolerated in a row before the driver gives up (the lease then expires and
/// the provision is resumed).
pub(super) const STORE_ATTEMPTS: u32 = 5;
/// Generation conflicts tolerated in a row (each reloads the row first).
const CONFLICT_ATTEMPTS: u32 = 8;

/// A running driver.
pub(super) struct Driver {
    pub(super) shared: Arc<Shared>,
    pub(super) record: ProvisionRecord,
    /// The provider client and the life of its grant (replaced before it expires).
    pub(super) client: Option<LeasedClient>,
    pub(super) kick: Arc<Notify>,
    pub(super) stop: watch::Receiver<Stop>,
    /// The last provider error seen, for a timeout's reason.
    pub(super) last_poll_code: Option<String>,
    /// Transient failures retried so far (the per-provision budget).
    pub(super) retries: u32,
    /// This driver's registration with its provider's poller, while the server is polled.
    pub(super) server_watch: Option<ServerWatch>,
    /// This driver's turn to render and create its server, from the render until the
    /// created server is recorded.
    pub(super) create_turn: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The user-data rendered by the render step, kept for the create that follows so the
    /// document is rendered once per create, not twice (a resumed driver renders again).
    pub(super) rendered: Option<Zeroizing<String>>,
    /// Changes applied to `record` but not yet written: the next commit carries them
    /// (re-applied to the row after a reload).
    unsaved: Vec<Deferred>,
}

/// What the node registry holds about the provision, read with its row.
pub(super) struct Joined {
    pub(super) progress: Vec<InstallReport>,
    pub(super) enrolled_node: Option<NodeId>,
}

/// A change to the row that waits for the next commit.
type Deferred = Box<dyn Fn(&mut ProvisionRecord) + Send + Sync>;

/// Unregisters the driver (and so its lease from the renewals) when it ends, however it
/// ends.
struct Registration {
    shared: Arc<Shared>,
    id: ProvisionId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.shared.events.unregister_driver(self.id.as_str());
    }
}

/// Drives `id` (whose registration `signals` are) until it is terminal or this process
/// loses it. `inserted`: the row as this process just inserted it, leased to itself by a
/// write started at the instant given (no lease to take, nothing to read).
pub(super) async fn drive(
    shared: Arc<Shared>,
    id: ProvisionId,
    inserted: Option<(ProvisionRecord, tokio::time::Instant)>,
    signals: DriverSignals,
) {
    let _registration = Registration {
        shared: Arc::clone(&shared),
        id: id.clone(),
    };
    if !shared.renewing.swap(true, Ordering::AcqRel) {
        tokio::spawn(leases::renew_all(Arc::downgrade(&shared)));
    }
    match start(&shared, &id, inserted, signals).await {
        Ok(None) => debug!(provision = %id, "another driver holds the provision"),
        Ok(Some(mut driver)) => match driver.run().await {
            Ok(()) => {
                info!(provision = %id, status = driver.record.status.as_str(), "provision finished")
            }
            Err(Halt::Crashed) => warn!(provision = %id, "driver stopped by a simulated crash"),
            Err(halt) => {
                warn!(provision = %id, ?halt, "driver stopped; the provision will be resumed");
                // Out of the renewals first, so they cannot extend the lease once released.
                shared.events.forget_lease(id.as_str());
                let _ = shared.store.release_lease(&id, &shared.owner).await;
            }
        },
        Err(halt) => warn!(provision = %id, ?halt, "could not start driving"),
    }
}

async fn start(
    shared: &Arc<Shared>,
    id: &ProvisionId,
    inserted: Option<(ProvisionRecord, tokio::time::Instant)>,
    signals: DriverSignals,
) -> Result<Option<Driver>, Halt> {
    let (record, epoch, asked) = match inserted {
        // Leased by the insert (at the database's clock where replicas share it): the
        // tenure counts from before that write.
        Some((record, asked)) if record.lease_owner.as_deref() == Some(shared.owner.as_str()) => {
            let epoch = record.lease_epoch;
            (record, epoch, asked)
        }
        _ => match lease_and_read(shared, id).await? {
            Some(taken) => taken,
            None => return Ok(None),
        },
    };
    shared.events.hold_lease(
        id.as_str(),
        Tenure {
            epoch,
            confirmed: asked,
        },
    );
    let retries = record.saga.retries;
    Ok(Some(Driver {
        shared: Arc::clone(shared),
        record,
        client: None,
        kick: signals.kick,
        stop: signals.stop,
        last_poll_code: None,
        retries,
        server_watch: None,
        create_turn: None,
        rendered: None,
        unsaved: Vec::new(),
    }))
}

/// Takes the lease of `id` and reads its row: the row, the lease's epoch and when it was
/// asked for; `None` when another driver holds it.
async fn lease_and_read(
    shared: &Arc<Shared>,
    id: &ProvisionId,
) -> Result<Option<(ProvisionRecord, u64, tokio::time::Instant)>, Halt> {
    let store_halt = |e: crate::model::ports::StoreError| Halt::StoreUnavailable(e.to_string());
    let asked = tokio::time::Instant::now();
    let Some(epoch) = take_lease(shared, id).await.map_err(store_halt)? else {
        return Ok(None);
    };
    let record = shared
        .store
        .get_provision(id)
        .await
        .map_err(store_halt)?
        .ok_or(Halt::Finished)?;
    if record.lease_epoch != epoch {
        // Released and taken again in between: another driver's now.
        return Ok(None);
    }
    Ok(Some((record, epoch, asked)))
}

/// Takes or renews the lease of `id` for this process, at the database's time; its epoch.
async fn take_lease(
    shared: &Shared,
    id: &ProvisionId,
) -> Result<Option<u64>, crate::model::ports::StoreError> {
    let now = shared.lease_now().await?;
    shared
        .store
        .acquire_lease(id, &shared.owner, now, shared.lease_until(now))
        .await
}

/// How a forward step ended.
enum Race {
    Done(Result<(), StepError>),
    TimedOut,
    Stopped(Stop),
}

impl Driver {
    /// Runs the saga from the persisted step until the provision is terminal.
    pub(super) async fn run(&mut self) -> Result<(), Halt> {
        loop {
            if self.record.status.is_terminal() {
                return Ok(());
            }
            let step = self.record.saga_step;
            let outcome = match step {
                SagaStep::Unwinding => return self.unwind().await,
                SagaStep::Done => return Ok(()),
                _ => self.forward(step).await,
            };
            match outcome {
                Ok(()) => {}
                Err(StepError::Fail(failure)) => self.begin_unwind(failure).await?,
                Err(StepError::Halt(halt)) => return Err(halt),
            }
        }
    }

    /// Runs one forward step, racing the provision's deadline and the stop signal.
    async fn forward(&mut self, step: SagaStep) -> Result<(), StepError> {
        if self.record.cancel_requested {
            return Err(Failure::cancelled(self.record.status).into());
        }
        self.hook(HookPoint::Before(step))?;
        let remaining = self.remaining();
        let mut stop = self.stop.clone();
        let grace = self.shared.cx.config.tuning.cancel_grace;
        let id = self.record.id.clone();
        let race = if remaining.is_zero() {
            Race::TimedOut
        } else {
            let run = self.run_step(step);
            tokio::pin!(run);
            // The stop signal first: once the lease is lost, the step is not polled again.
            let race = tokio::select! {
                biased;
                s = stopped(&mut stop) => Race::Stopped(s),
                () = tokio::time::sleep(remaining) => Race::TimedOut,
                r = &mut run => Race::Done(r),
            };
            // A create in flight is not cut midway (its server could exist with nobody
            // knowing its id): it finishes, bounded, and the undo then deletes by id.
            let interrupted = matches!(race, Race::TimedOut | Race::Stopped(Stop::Cancel));
            if interrupted && step == SagaStep::CreateServer {
                debug!(provision = %id, "letting the create in flight finish");
                if let Ok(Err(StepError::Halt(halt))) = tokio::time::timeout(grace, &mut run).await
                {
                    return Err(halt.into());
                }
            }
            race
        };
        let outcome = match race {
            Race::Done(Ok(())) => self.after_step(step).await,
            Race::Done(Err(e)) => Err(e),
            Race::TimedOut => {
                let timeout = self.shared.cx.config.timeout;
                Err(
                    Failure::timeout(self.record.status, timeout, self.last_poll_code.clone())
                        .into(),
                )
            }
            Race::Stopped(Stop::Cancel) => Err(Failure::cancelled(self.record.status).into()),
            Race::Stopped(_) => Err(Halt::LeaseLost.into()),
        };
        if outcome.is_err() {
            // Failing, timed out, cancelled or stopped: the server is no longer polled, and
            // the turn to create goes to the next provision.
            self.server_watch = None;
            self.create_turn = None;
            self.rendered = None;
        }
        outcome
    }

    /// The hook after a recorded step: a replay rewinds the saga to the step.
    async fn after_step(&mut self, step: SagaStep) -> Result<(), StepError> {
        if self.record.status.is_terminal() {
            return Ok(());
        }
        if self.hook(HookPoint::After(step))? == HookAction::Replay {
            debug!(provision = %self.record.id, step = step.as_str(), "replaying a step");
            self.commit(move |r| {
                r.saga.forget(step);
                r.saga_step = step;
            })
            .await?;
        }
        Ok(())
    }

    /// Time left before the provision times out.
    pub(super) fn remaining(&self) -> Duration {
        let deadline = self.record.created_at + self.shared.cx.config.timeout;
        (deadline - self.shared.now())
            .try_into()
            .unwrap_or(Duration::ZERO)
    }

    /// Consults the test hook. `Fail` and `Crash` become errors; the rest is returned.
    pub(super) fn hook(&self, point: HookPoint) -> Result<HookAction, StepError> {
        let Some(hook) = &self.shared.hook else {
            return Ok(HookAction::Continue);
        };
        match hook.at(&self.record.id, point) {
            HookAction::Fail => {
                let step = match point {
                    HookPoint::Before(s)
                    | HookPoint::AfterCall(s)
                    | HookPoint::After(s)
                    | HookPoint::Undo(s) => s,
                };
                Err(Failure::new(
                    self.record.status,
                    format!("injected failure at {}", step.as_str()),
                )
                .into())
            }
            HookAction::Crash => Err(Halt::Crashed.into()),
            action => Ok(action),
        }
    }

    /// Applies `change` to the current row and writes it, conditionally on its generation.
    /// On a conflict the row is reloaded (still ours?) and the change re-applied. A status
    /// change records when the stage was entered.
    pub(super) async fn commit(
        &mut self,
        change: impl Fn(&mut ProvisionRecord),
    ) -> Result<(), Halt> {
        let (mut conflicts, mut errors) = (0, 0);
        loop {
            let now = self.shared.now();
            let mut next = self.record.clone();
            change(&mut next);
            debug_assert!(
                self.record.status.can_become(next.status),
                "illegal transition"
            );
            next.updated_at = now;
            if next.status != self.record.status {
                next.stages.push(StageTiming {
                    status: next.status,
                    entered_at: now,
                });
            }
            match self.shared.store.update_provision(&next).await {
                Ok(Some(stored)) => {
                    self.record = stored;
                    self.unsaved.clear();
                    self.shared.events.publish(&Provision::from(&self.record));
                    return Ok(());
                }
                Ok(None) if conflicts < CONFLICT_ATTEMPTS => {
                    conflicts += 1;
                    self.reload().await?;
                }
                Err(e) if errors < STORE_ATTEMPTS => {
                    errors += 1;
                    warn!(provision = %self.record.id, error = %e, "could not record provision progress; retrying");
                    tokio::time::sleep(Duration::from_millis(200) * 2u32.pow(errors)).await;
                }
                Ok(None) => return Err(Halt::LeaseLost),
                Err(e) => return Err(Halt::StoreUnavailable(e.to_string())),
            }
        }
    }

    /// Applies `change` to the row now and writes it with the next commit: a step whose
    /// outcome need not be durable on its own (redone after a crash with the same result)
    /// costs no write.
    pub(super) fn defer(&mut self, change: impl Fn(&mut ProvisionRecord) + Send + Sync + 'static) {
        change(&mut self.record);
        self.unsaved.push(Box::new(change));
    }

    /// Reads the provision (adopting a newer row: a cancel written by the API, possibly
    /// on another replica) with its reports and enrollment, in one round trip. A failed
    /// read is logged and waited out.
    pub(super) async fn refresh(&mut self) -> Result<Option<Joined>, StepError> {
        match self.shared.store.wait_view(&self.record.id).await {
            Ok(Some(view)) => {
                if view.record.generation > self.record.generation {
                    self.adopt(view.record)?;
                }
                Ok(Some(Joined {
                    progress: view.progress,
                    enrolled_node: view.enrolled_node,
                }))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                warn!(provision = %self.record.id, error = %e, "could not re-read the provision");
                Ok(None)
            }
        }
    }

    /// What the steps act with (they reach the store only through `commit`, `reload` and
    /// `refresh`).
    pub(super) fn cx(&self) -> &StepContext {
        &self.shared.cx
    }

    /// Re-reads the row; stops when it finished, or when its lease is another driver's or
    /// changed hands since this driver took it (its epoch), even back to this process.
    pub(super) async fn reload(&mut self) -> Result<(), Halt> {
        let fresh = self
            .shared
            .store
            .get_provision(&self.record.id)
            .await
            .map_err(|e| Halt::StoreUnavailable(e.to_string()))?
            .ok_or(Halt::Finished)?;
        self.adopt(fresh)
    }

    /// Takes `fresh` as the row (with the unsaved changes applied again); stops when it
    /// finished, or when its lease is another driver's or changed hands since this driver
    /// took it.
    fn adopt(&mut self, fresh: ProvisionRecord) -> Result<(), Halt> {
        if fresh.status.is_terminal() {
            self.record = fresh;
            return Err(Halt::Finished);
        }
        if fresh.lease_owner.as_deref() != Some(self.shared.owner.as_str())
            || fresh.lease_epoch != self.record.lease_epoch
        {
            // Every wait of this driver ends on it, not only the caller's.
            self.shared
                .events
                .stop(self.record.id.as_str(), Stop::LeaseLost);
            return Err(Halt::LeaseLost);
        }
        self.record = fresh;
        for change in &self.unsaved {
            change(&mut self.record);
        }
        Ok(())
    }

    /// RFC 3339 "now" for the saga log.
    pub(super) fn stamp(&self) -> String {
        crate::model::provision::stamp(self.shared.now())
    }
}

/// Resolves when the stop signal leaves `Run` (never, if the sender is gone).
async fn stopped(stop: &mut watch::Receiver<Stop>) -> Stop {
    let signal = stop.wait_for(|s| *s != Stop::Run).await.map(|s| *s);
    match signal {
        Ok(s) => s,
        Err(_) => std::future::pending().await,
    }
}
