//! The status engine's in-process hub: per provision, the driver's wake-up and stop
//! signals, and the `watch` channel of the latest snapshot that every `WatchProvision`
//! stream of this replica reads. It is also the `EnrollmentListener`, so an enrollment or a
//! progress report wakes the provision's driver at once.
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use prost::bytes::Bytes;

use tokio::sync::{Notify, watch};

use crate::model::ports::EnrollmentListener;
use crate::model::provision::Provision;
use crate::model::{InstallStep, Node};

/// A signal to a running driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Keep going.
    Run,
    /// The operator cancelled: fail and unwind now, even mid-step.
    Cancel,
    /// The lease went to another driver: stop without writing.
    LeaseLost,
}

/// What a driver listens to.
pub(crate) struct DriverSignals {
    pub(crate) kick: Arc<Notify>,
    pub(crate) stop: watch::Receiver<Stop>,
}

struct DriverHandle {
    kick: Arc<Notify>,
    stop: watch::Sender<Stop>,
    /// The lease the driver holds, once it holds one.
    lease: Option<Tenure>,
}

impl DriverHandle {
    /// Signals the driver (see [`ProvisionEvents::stop`]).
    fn signal(&mut self, signal: Stop) {
        if signal == Stop::LeaseLost {
            // No longer renewed: the driver stops without writing.
            self.lease = None;
        }
        self.stop.send_if_modified(|current| {
            let replace = *current != Stop::LeaseLost && *current != signal;
            if replace {
                *current = signal;
            }
            replace
        });
        self.kick.notify_one();
    }
}

/// A driver's hold on its lease: the epoch it took, and when (by this process's monotonic
/// clock) the lease was last confirmed, measured from before the write that confirmed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tenure {
    pub(crate) epoch: u64,
    pub(crate) confirmed: tokio::time::Instant,
}

type Snapshot = watch::Sender<Option<Arc<Published>>>;

/// A committed state as this replica's watchers see it, with its wire form encoded once,
/// by the first stream that sends it, and shared by every other.
#[derive(Debug)]
pub struct Published {
    /// The state.
    pub provision: Provision,
    encoded: OnceLock<Bytes>,
}

impl Published {
    fn new(provision: Provision) -> Self {
        Published {
            provision,
            encoded: OnceLock::new(),
        }
    }

    /// The wire form, made by `encode` the first time it is asked for.
    pub fn encoded(&self, encode: impl FnOnce(&Provision) -> Bytes) -> Bytes {
        self.encoded.get_or_init(|| encode(&self.provision)).clone()
    }
}

/// The hub. Create one per process, hand it to `Nodes::with_enrollment_listener` and to the
/// `Provisioner`.
#[derive(Default)]
pub struct ProvisionEvents {
    drivers: Mutex<HashMap<String, DriverHandle>>,
    watches: Mutex<HashMap<String, Arc<Snapshot>>>,
}

impl fmt::Debug for ProvisionEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvisionEvents")
            .field("drivers", &lock(&self.drivers).len())
            .field("watched", &lock(&self.watches).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ProvisionEvents {
    /// An empty hub.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the one local driver of `id`; `None` when one is registered already.
    pub(crate) fn register_driver(&self, id: &str) -> Option<DriverSignals> {
        let mut drivers = lock(&self.drivers);
        if drivers.contains_key(id) {
            return None;
        }
        let kick = Arc::new(Notify::new());
        let (stop, rx) = watch::channel(Stop::Run);
        drivers.insert(
            id.to_owned(),
            DriverHandle {
                kick: Arc::clone(&kick),
                stop,
                lease: None,
            },
        );
        Some(DriverSignals { kick, stop: rx })
    }

    /// Records that the driver of `id` holds the lease `tenure` (renewed with every other
    /// lease of this process, see `leases.rs`).
    pub(crate) fn hold_lease(&self, id: &str, tenure: Tenure) {
        if let Some(d) = lock(&self.drivers).get_mut(id) {
            d.lease = Some(tenure);
        }
    }

    /// Takes `id`'s lease out of the renewals (its driver gives it up).
    pub(crate) fn forget_lease(&self, id: &str) {
        if let Some(d) = lock(&self.drivers).get_mut(id) {
            d.lease = None;
        }
    }

    /// Stops the driver of `id` if it still holds the lease of `epoch` (a newer driver of
    /// the same provision holds another epoch and keeps going).
    pub(crate) fn lose_lease(&self, id: &str, epoch: u64) -> bool {
        match lock(&self.drivers).get_mut(id) {
            Some(d) if d.lease.is_some_and(|t| t.epoch == epoch) => {
                d.signal(Stop::LeaseLost);
                true
            }
            _ => false,
        }
    }

    /// Every lease a local driver holds.
    pub(crate) fn leases(&self) -> Vec<(String, Tenure)> {
        lock(&self.drivers)
            .iter()
            .filter_map(|(id, d)| Some((id.clone(), d.lease?)))
            .collect()
    }

    /// Moves the confirmation of `id`'s lease to `at`, if its driver still holds `epoch`.
    pub(crate) fn confirm_lease(&self, id: &str, epoch: u64, at: tokio::time::Instant) {
        if let Some(Tenure {
            epoch: held,
            confirmed,
        }) = lock(&self.drivers)
            .get_mut(id)
            .and_then(|d| d.lease.as_mut())
            && *held == epoch
        {
            *confirmed = (*confirmed).max(at);
        }
    }

    /// Forgets the driver of `id`.
    pub(crate) fn unregister_driver(&self, id: &str) {
        lock(&self.drivers).remove(id);
    }

    /// Whether a local driver runs for `id`.
    pub(crate) fn is_driving(&self, id: &str) -> bool {
        lock(&self.drivers).contains_key(id)
    }

    /// Wakes the driver of `id`, if any (a wake-up is kept until it next waits).
    pub(crate) fn kick(&self, id: &str) {
        if let Some(d) = lock(&self.drivers).get(id) {
            d.kick.notify_one();
        }
    }

    /// Signals the driver of `id`; `false` when none runs here. A lost lease is final: no
    /// later signal (a cancel) replaces it, so the driver stops rather than unwinds.
    pub(crate) fn stop(&self, id: &str, signal: Stop) -> bool {
        match lock(&self.drivers).get_mut(id) {
            Some(d) => {
                d.signal(signal);
                true
            }
            None => false,
        }
    }

    /// Offers a committed snapshot to the watchers of its provision. Only a newer
    /// generation replaces the current one, and watchers are woken only when something
    /// they show changed (bookkeeping writes move the generation silently).
    pub(crate) fn publish(&self, snapshot: &Provision) {
        let Some(sender) = lock(&self.watches).get(snapshot.id.as_str()).cloned() else {
            return;
        };
        sender.send_if_modified(|current| match current {
            Some(c) if c.provision.generation >= snapshot.generation => false,
            Some(c) => {
                let visible = !c.provision.same_view(snapshot);
                *c = Arc::new(Published::new(snapshot.clone()));
                visible
            }
            None => {
                *current = Some(Arc::new(Published::new(snapshot.clone())));
                true
            }
        });
    }

    /// A receiver of `id`'s snapshots, and the sender when this call created the channel
    /// (the caller then starts the one follower that keeps it current).
    pub(crate) fn watch(
        &self,
        id: &str,
    ) -> (
        watch::Receiver<Option<Arc<Published>>>,
        Option<Arc<Snapshot>>,
    ) {
        let mut watches = lock(&self.watches);
        if let Some(sender) = watches.get(id) {
            return (sender.subscribe(), None);
        }
        let (sender, rx) = watch::channel(None);
        let sender = Arc::new(sender);
        watches.insert(id.to_owned(), Arc::clone(&sender));
        (rx, Some(sender))
    }

    /// Drops the channel of `id` if it is `sender` and nobody watches any more (a
    /// subscription that failed before it was handed out).
    pub(crate) fn forget_watch(&self, id: &str, sender: &Arc<Snapshot>) {
        let mut watches = lock(&self.watches);
        if watches
            .get(id)
            .is_some_and(|s| Arc::ptr_eq(s, sender) && s.receiver_count() == 0)
        {
            watches.remove(id);
        }
    }

    /// Forgets `id`'s channel when the subscription being dropped holds its last receiver:
    /// under the same lock as [`Self::watch`], so a subscriber arriving now keeps it. (Two
    /// subscriptions dropped at the same moment may each see the other: the follower's
    /// next tick forgets the channel then.)
    fn release_watch(&self, id: &str) {
        let mut watches = lock(&self.watches);
        if watches.get(id).is_some_and(|s| s.receiver_count() <= 1) {
            watches.remove(id);
        }
    }

    /// The watched provisions whose changes this replica learns only from the store: not
    /// terminal, and driven by no local driver (which publishes each commit itself).
    /// Forgets channels nobody reads any more.
    pub(crate) fn followed(&self) -> Vec<String> {
        let candidates: Vec<String> = {
            let mut watches = lock(&self.watches);
            watches.retain(|_, s| s.receiver_count() > 0);
            watches
                .iter()
                .filter(|(_, s)| {
                    !s.borrow()
                        .as_ref()
                        .is_some_and(|p| p.provision.status.is_terminal())
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        let drivers = lock(&self.drivers);
        candidates
            .into_iter()
            .filter(|id| !drivers.contains_key(id))
            .collect()
    }

    /// The provisions a local driver drives.
    pub(crate) fn driving(&self) -> Vec<String> {
        lock(&self.drivers).keys().cloned().collect()
    }

    /// How many provisions a local driver drives.
    pub(crate) fn driving_count(&self) -> usize {
        lock(&self.drivers).len()
    }

    /// Whether a stream of this replica watches `id`.
    pub(crate) fn is_watched(&self, id: &str) -> bool {
        lock(&self.watches).contains_key(id)
    }

    /// How many provisions have a watch channel (for tests and metrics).
    pub fn watched(&self) -> usize {
        lock(&self.watches).len()
    }
}

impl EnrollmentListener for ProvisionEvents {
    fn node_enrolled(&self, node: &Node) {
        if let Some(id) = &node.provision_id {
            self.kick(id);
        }
    }

    fn install_progress(&self, provision_id: &str, _step: InstallStep) {
        self.kick(provision_id);
    }
}

/// One `WatchProvision` stream's view: the current state first, then each newer state,
/// ending after a terminal one.
#[derive(Debug)]
pub struct Subscription {
    rx: watch::Receiver<Option<Arc<Published>>>,
    last: u64,
    done: bool,
    /// Where `rx` came from, to forget the channel with its last subscription.
    hub: Arc<ProvisionEvents>,
    id: String,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.release_watch(&self.id);
    }
}

impl Subscription {
    /// A subscription reading `rx` (from `hub`'s channel of `id`), which has seen nothing
    /// yet.
    pub(crate) fn new(
        rx: watch::Receiver<Option<Arc<Published>>>,
        hub: Arc<ProvisionEvents>,
        id: String,
    ) -> Self {
        Subscription {
            rx,
            last: 0,
            done: false,
            hub,
            id,
        }
    }

    /// The next state: newer (by generation) than the last one returned; `None` after a
    /// terminal state. Intermediate states may be coalesced, a terminal one never is.
    pub async fn next(&mut self) -> Option<Provision> {
        self.next_shared().await.map(|p| p.provision.clone())
    }

    /// [`Self::next`], shared with every other subscription of this replica (no copy).
    pub async fn next_shared(&mut self) -> Option<Arc<Published>> {
        if self.done {
            return None;
        }
        loop {
            let current = self.rx.borrow_and_update().clone();
            if let Some(p) = current
                && p.provision.generation > self.last
            {
                self.last = p.provision.generation;
                self.done = p.provision.status.is_terminal();
                return Some(p);
            }
            if self.rx.changed().await.is_err() {
                self.done = true;
                return None;
            }
        }
    }
}
