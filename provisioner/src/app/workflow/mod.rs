//! The provision workflow: a durable saga per provision, driven by one background task per
//! in-flight provision on the replica holding its lease.
//!
//! Steps, in order (each idempotent, each persisted before and after its provider call):
//! `mint_join_token` → `render_user_data` → `create_server` (idempotent at the provider by
//! provision id) → `wait_running` (adaptive polling, single-flight) → `installing`
//! (cloud-init progress reports, pushed) → `enrolling` → `ready` (the enrollment is pushed
//! by `Nodes` through [`ProvisionEvents`]). On failure, timeout or cancel the completed
//! steps are undone in reverse — server and dedicated resources deleted (looked up by our
//! labels when the create's answer was never recorded), token revoked — and the provision
//! becomes `failed`, which releases its name. After a restart, [`Workflow::resume_all`]
//! continues every provision whose lease expired from its persisted step.
mod calls;
mod create;
mod creates;
mod driver;
mod events;
mod failure;
mod feed;
pub(crate) mod hooks;
mod leases;
mod poller;
mod retry;
mod steps;
mod sweeper;
mod teardown;
mod undo;
mod wait;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use time::OffsetDateTime;
use tokio::task::JoinHandle;
use tracing::{info, warn};

pub(crate) use events::Stop;
pub use events::{ProvisionEvents, Published, Subscription};
pub(crate) use failure::describe as describe_provider_error;
pub use sweeper::{SweepReport, Sweeper};
pub use teardown::ProvisionTeardown;

use crate::app::{Nodes, ProvisionerConfig};
use crate::model::ports::Clock;
use crate::model::ports::{OrphanStore, ProvisionStore, StoreError};
use crate::model::provision::{Provision, ProvisionError, ProvisionId, ProvisionRecord};
use hooks::StepHook;
use levelrail_clouds::registry::ProviderRegistry;

/// What the saga's steps act with: the provider clients and their retry budgets, the node
/// registry (join tokens, enrollment), the orphan inventory (what an undo could not delete),
/// the configuration and the clock. Not the provision store, the change feed or the lease:
/// a step changes its provision only through the driver's `commit` (the step files name
/// nothing else, which `tests::steps_see_only_their_context` holds).
pub(crate) struct StepContext {
    pub(crate) orphans: Arc<dyn OrphanStore>,
    pub(crate) nodes: Arc<Nodes>,
    pub(crate) registry: Arc<ProviderRegistry>,
    pub(crate) config: Arc<ProvisionerConfig>,
    pub(crate) clock: Clock,
    /// Retry budgets per credential, shared by every driver of this process.
    pub(crate) budgets: retry::RetryBudgets,
    /// The pollers of booting servers, one per provider, shared likewise.
    pub(crate) pollers: poller::Pollers,
    /// Turns to create a server, per cloud.
    pub(crate) creates: creates::CreateTurns,
}

impl StepContext {
    /// Now, by the provisioner's clock.
    pub(crate) fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// What a poller of booting servers acts with.
    pub(crate) fn poll_context(&self) -> poller::PollContext {
        poller::PollContext {
            registry: Arc::clone(&self.registry),
            config: Arc::clone(&self.config),
            clock: Arc::clone(&self.clock),
        }
    }
}

/// What every driver of this process shares: the steps' context, and what only the
/// driving loop, the sweeper and the watchers use.
pub(crate) struct Shared {
    pub(crate) cx: StepContext,
    pub(crate) store: Arc<dyn ProvisionStore>,
    pub(crate) events: Arc<ProvisionEvents>,
    /// This process's lease owner id.
    pub(crate) owner: String,
    pub(crate) hook: Option<Arc<dyn StepHook>>,
    /// Whether the follower of watched provisions ([`follow_all`]) was started.
    pub(crate) following: AtomicBool,
    /// Whether the renewal of this process's leases (`leases.rs`) was started.
    pub(crate) renewing: AtomicBool,
}

impl Shared {
    /// Now, by the provisioner's clock.
    pub(crate) fn now(&self) -> OffsetDateTime {
        self.cx.now()
    }

    /// The time leases are taken and compared at: the database's clock when the store has
    /// one shared by several replicas, else the provisioner's.
    pub(crate) async fn lease_now(&self) -> Result<OffsetDateTime, StoreError> {
        Ok(self
            .store
            .database_time()
            .await?
            .unwrap_or_else(|| self.now()))
    }

    /// When a lease taken now expires.
    pub(crate) fn lease_until(&self, now: OffsetDateTime) -> OffsetDateTime {
        now + self.cx.config.tuning.lease_ttl
    }
}

/// The workflow engine of one control-plane process.
pub struct Workflow {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Workflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow")
            .field("owner", &self.shared.owner)
            .finish_non_exhaustive()
    }
}

impl Workflow {
    /// A workflow engine with a fresh lease-owner id. `events` must be the listener given
    /// to `nodes` (`Nodes::with_enrollment_listener`).
    pub fn new(
        store: Arc<dyn ProvisionStore>,
        orphans: Arc<dyn OrphanStore>,
        nodes: Arc<Nodes>,
        registry: Arc<ProviderRegistry>,
        events: Arc<ProvisionEvents>,
        config: Arc<ProvisionerConfig>,
        clock: Clock,
    ) -> Self {
        let owner = format!("wf_{}", uuid::Uuid::new_v4().simple());
        let shared = Shared {
            cx: StepContext {
                orphans,
                nodes,
                registry,
                config,
                clock,
                budgets: retry::RetryBudgets::default(),
                pollers: poller::Pollers::default(),
                creates: creates::CreateTurns::default(),
            },
            store,
            events,
            owner,
            hook: None,
            following: AtomicBool::new(false),
            renewing: AtomicBool::new(false),
        };
        Workflow {
            shared: Arc::new(shared),
        }
    }

    /// The same engine with a fault-injection hook (tests).
    #[cfg(test)]
    pub(crate) fn with_hook(self, hook: Arc<dyn StepHook>) -> Self {
        let Shared {
            cx,
            store,
            events,
            owner,
            ..
        } = Arc::into_inner(self.shared)
            .expect("with_hook is called before the workflow is shared");
        let shared = Shared {
            cx,
            store,
            events,
            owner,
            hook: Some(hook),
            following: AtomicBool::new(false),
            renewing: AtomicBool::new(false),
        };
        Workflow {
            shared: Arc::new(shared),
        }
    }

    /// This process's lease-owner id.
    pub fn owner(&self) -> &str {
        &self.shared.owner
    }

    /// How many provisions this process drives now.
    pub fn in_flight(&self) -> usize {
        self.shared.events.driving_count()
    }

    /// Starts driving `id` in the background unless a driver of this process already does;
    /// the driver stops at once if another replica holds the lease.
    pub fn start(&self, id: &ProvisionId) {
        self.spawn_driver(id.clone(), None);
    }

    /// Starts driving a provision this process just inserted, leased to itself by a write
    /// that started at `asked`: the driver starts from `record` with no read and no lease
    /// write of its own.
    pub fn start_leased(&self, record: ProvisionRecord, asked: tokio::time::Instant) {
        self.spawn_driver(record.id.clone(), Some((record, asked)));
    }

    /// Registers the one local driver of `id` now (it counts as in flight from here) and
    /// runs it in the background; nothing when one is registered already.
    fn spawn_driver(
        &self,
        id: ProvisionId,
        inserted: Option<(ProvisionRecord, tokio::time::Instant)>,
    ) {
        let Some(signals) = self.shared.events.register_driver(id.as_str()) else {
            return;
        };
        tokio::spawn(driver::drive(
            Arc::clone(&self.shared),
            id,
            inserted,
            signals,
        ));
    }

    /// Starts a driver for every provision in flight whose lease is free or expired (after
    /// a restart, or when another replica died). Returns how many were started.
    pub async fn resume_all(&self) -> Result<usize, StoreError> {
        let now = self.shared.lease_now().await?;
        let ids = self.shared.store.list_resumable(now).await?;
        for id in &ids {
            info!(provision = %id, "resuming provision");
            self.start(id);
        }
        Ok(ids.len())
    }

    /// Runs [`Self::resume_all`] now and then every `every` (picks up provisions whose
    /// replica died), until the handle is aborted.
    pub fn spawn_recovery(&self, every: Duration) -> JoinHandle<()> {
        let this = Workflow {
            shared: Arc::clone(&self.shared),
        };
        tokio::spawn(async move {
            loop {
                if let Err(e) = this.resume_all().await {
                    warn!(error = %e, "could not list provisions to resume");
                }
                tokio::time::sleep(every).await;
            }
        })
    }

    /// Follows the store's change feed (see `feed`), where several replicas share the
    /// database; `None` when the store is this process's alone.
    pub async fn spawn_change_feed(&self) -> Result<Option<JoinHandle<()>>, StoreError> {
        let Some(feed) = self.shared.store.change_feed().await? else {
            return Ok(None);
        };
        Ok(Some(tokio::spawn(feed::follow_feed(
            Arc::downgrade(&self.shared),
            feed,
        ))))
    }

    /// Commits nothing; hands a snapshot to this replica's watchers.
    pub(crate) fn publish(&self, snapshot: &Provision) {
        self.shared.events.publish(snapshot);
    }

    /// Interrupts the local driver of `id` for a cancel; starts one when none runs here.
    pub(crate) fn interrupt_for_cancel(&self, id: &ProvisionId) {
        if !self.shared.events.stop(id.as_str(), Stop::Cancel) {
            self.start(id);
        }
    }

    /// A subscription to `id`'s states: the current state first (read from the store), then
    /// each change. One follower per replica keeps every channel current with changes
    /// committed by other replicas, in batched store reads (never provider calls).
    pub async fn subscribe(&self, id: &ProvisionId) -> Result<Subscription, ProvisionError> {
        let (rx, created) = self.shared.events.watch(id.as_str());
        let current = self.shared.store.get_provision(id).await;
        let current = match current {
            Ok(Some(record)) => record,
            other => {
                drop(rx);
                if let Some(sender) = &created {
                    self.shared.events.forget_watch(id.as_str(), sender);
                }
                return Err(match other {
                    Err(e) => e.into(),
                    _ => ProvisionError::NotFound(id.to_string()),
                });
            }
        };
        self.publish(&Provision::from(&current));
        if !self.shared.following.swap(true, Ordering::AcqRel) {
            let interval = self.shared.cx.config.tuning.follow_interval;
            tokio::spawn(follow_all(Arc::downgrade(&self.shared), interval));
        }
        Ok(Subscription::new(
            rx,
            Arc::clone(&self.shared.events),
            id.as_str().to_owned(),
        ))
    }
}

/// Keeps this replica's watch channels current with the changes other replicas commit:
/// every `interval`, one batched read of the watched provisions no local driver drives
/// (one query per [`crate::model::ports::PROVISIONS_PER_READ`], however many streams watch
/// them), for as long as the workflow exists.
async fn follow_all(shared: Weak<Shared>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let ids: Vec<ProvisionId> = shared
            .events
            .followed()
            .iter()
            .filter_map(|id| ProvisionId::parse(id).ok())
            .collect();
        if ids.is_empty() {
            continue;
        }
        match shared.store.get_provisions(&ids).await {
            Ok(records) => {
                for record in &records {
                    shared.events.publish(&Provision::from(record));
                }
            }
            Err(e) => {
                warn!(watched = ids.len(), error = %e, "could not refresh the watched provisions")
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
