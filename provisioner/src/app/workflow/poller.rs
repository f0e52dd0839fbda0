//! Booting servers are polled per cloud, not per provision. One poller per provider reads
//! the servers every waiting driver registered, in rounds of one provider call: a batch of
//! up to `poll_batch` servers of one `poll_group` (a label selector, an instance-id filter),
//! least recently polled first. A cloud that cannot read several servers in one call gets
//! a few single reads per round instead.
//!
//! A round comes `poll_initial` after the previous one while some registered server was
//! never polled; otherwise the pause grows by half each round up to `poll_max`, and a
//! provider's `Retry-After` lengthens it. So the calls a cloud receives per minute do not
//! grow with the number of provisions in flight: a large fleet is polled less often per
//! server (each server is still seen once soon after its create), and the nodes' own
//! progress reports and enrollments, which are pushed, carry the rest.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tracing::{debug, info};

use crate::app::ProvisionerConfig;
use crate::model::ports::Clock;
use levelrail_clouds::registry::{LeasedClient, ProviderRegistry};
use levelrail_clouds::{CloudProvider, ErrorKind, PollTarget, ProviderError, ServerInfo};
use levelrail_types::ProviderId;

/// Servers a round reads one call each: on a cloud that cannot read several in one call
/// (Azure), and among a batch's targets that its answer did not show. A few, so a fleet is
/// still seen every few rounds, while the calls per minute stay bounded.
const READS_ALONE_PER_ROUND: usize = 4;

/// What the last poll of a server found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Observation {
    /// The server as the provider reports it.
    Seen(ServerInfo),
    /// The server does not exist (confirmed by reading it alone).
    Gone(ProviderError),
    /// It cannot be read, and asking again will not help (a refused credential after a
    /// fresh grant, a rejected request).
    Refused(ProviderError),
    /// It could not be read this time; it is polled again.
    Failed(ProviderError),
}

/// The pollers of this process, one per provider (started on first use).
#[derive(Default)]
pub(crate) struct Pollers {
    map: Mutex<HashMap<ProviderId, Arc<Poller>>>,
}

impl std::fmt::Debug for Pollers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pollers").finish_non_exhaustive()
    }
}

/// What a poller acts with.
#[derive(Clone)]
pub(crate) struct PollContext {
    pub(crate) registry: Arc<ProviderRegistry>,
    pub(crate) config: Arc<ProvisionerConfig>,
    pub(crate) clock: Clock,
}

impl Pollers {
    /// Registers `target` with `provider`'s poller (started when it is not running) and
    /// returns the watch of its observations; the server is polled until every watch of it
    /// is dropped.
    pub(crate) fn watch(
        &self,
        cx: &PollContext,
        provider: ProviderId,
        target: PollTarget,
    ) -> ServerWatch {
        let poller = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(provider).or_insert_with(|| {
                Arc::new(Poller {
                    provider,
                    state: Mutex::new(State::default()),
                    wake: Notify::new(),
                })
            }))
        };
        let (rx, start) = {
            let mut state = poller.lock();
            let seq = state.next_seq;
            state.next_seq += 1;
            let entry = state
                .servers
                .entry(target.server_id.clone())
                .or_insert_with(|| Entry {
                    provision_id: target.provision_id.clone(),
                    tx: watch::channel(None).0,
                    watchers: 0,
                    polled: None,
                    seq,
                });
            entry.watchers += 1;
            let rx = entry.tx.subscribe();
            let start = !state.running;
            state.running = true;
            (rx, start)
        };
        if start {
            tokio::spawn(run(Arc::clone(&poller), cx.clone()));
        } else {
            poller.wake.notify_one();
        }
        ServerWatch {
            poller,
            server_id: target.server_id,
            rx,
        }
    }
}

/// A driver's registration of one server; dropping it ends the polling of that server
/// (once no other watch of it remains).
pub(crate) struct ServerWatch {
    poller: Arc<Poller>,
    server_id: String,
    rx: watch::Receiver<Option<Observation>>,
}

impl std::fmt::Debug for ServerWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerWatch")
            .field("server_id", &self.server_id)
            .finish_non_exhaustive()
    }
}

impl ServerWatch {
    /// The server this watch is of.
    pub(crate) fn server_id(&self) -> &str {
        &self.server_id
    }

    /// The next observation not yet taken (waits for one).
    pub(crate) async fn next(&mut self) -> Observation {
        loop {
            if self.rx.changed().await.is_err() {
                // The registration is gone; nothing will come.
                std::future::pending::<()>().await;
            }
            if let Some(o) = self.rx.borrow_and_update().clone() {
                return o;
            }
        }
    }
}

impl Drop for ServerWatch {
    fn drop(&mut self) {
        let mut state = self.poller.lock();
        if let Some(entry) = state.servers.get_mut(&self.server_id) {
            entry.watchers -= 1;
            if entry.watchers == 0 {
                state.servers.remove(&self.server_id);
            }
        }
    }
}

struct Poller {
    provider: ProviderId,
    state: Mutex<State>,
    /// Rung when a server is registered while the poller runs.
    wake: Notify,
}

impl Poller {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct State {
    servers: HashMap<String, Entry>,
    running: bool,
    next_seq: u64,
}

struct Entry {
    provision_id: String,
    tx: watch::Sender<Option<Observation>>,
    watchers: usize,
    /// When the server was last polled (`None`: never).
    polled: Option<Instant>,
    /// Registration order, to break ties.
    seq: u64,
}

/// One poller's rounds, for as long as servers are registered.
async fn run(poller: Arc<Poller>, cx: PollContext) {
    let _running = Running(Arc::clone(&poller));
    let tuning = cx.config.tuning.clone();
    let mut client: Option<LeasedClient> = None;
    let mut pause = tuning.poll_initial;
    let mut last_round: Option<Instant> = None;
    // The provider's own pause (`Retry-After`), which no new server shortens.
    let mut not_before = Instant::now();
    loop {
        let Some(unpolled) = poller.unpolled() else {
            return;
        };
        if unpolled {
            pause = tuning.poll_initial;
        }
        let due = last_round.map_or(not_before, |last| (last + pause).max(not_before));
        if Instant::now() < due {
            tokio::select! {
                () = tokio::time::sleep_until(due) => {}
                // A new server: see again whether the round comes sooner.
                () = poller.wake.notified(), if !unpolled => continue,
            }
        }
        last_round = Some(Instant::now());
        let asked = match leased(&cx, poller.provider, &mut client, false).await {
            Ok(c) => {
                let Some(targets) = poller.pick(c.as_ref()) else {
                    continue;
                };
                let (observations, asked) =
                    round(&cx, poller.provider, &mut client, c, &targets).await;
                poller.deliver(
                    targets
                        .iter()
                        .map(|t| t.server_id.as_str())
                        .zip(observations)
                        .filter_map(|(id, o)| Some((id, o?))),
                );
                asked
            }
            Err(e) => {
                // No client (no credential, the broker unreachable): every server hears it.
                let ids: Vec<String> = poller.lock().servers.keys().cloned().collect();
                let failed = failure(&e);
                poller.deliver(ids.iter().map(|id| (id.as_str(), failed.clone())));
                e.retry_after
            }
        };
        if !unpolled {
            pause = pause.mul_f64(1.5).min(tuning.poll_max);
        }
        if let Some(asked) = asked {
            not_before = Instant::now() + asked.min(tuning.retry.max_retry_after);
        }
    }
}

/// Marks the poller stopped if its task panics, so the next registration starts another.
struct Running(Arc<Poller>);

impl Drop for Running {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().running = false;
        }
    }
}

impl Poller {
    /// Whether some registered server was never polled; `None` (and the poller marked
    /// stopped) when none is registered.
    fn unpolled(&self) -> Option<bool> {
        let mut state = self.lock();
        if state.servers.is_empty() {
            state.running = false;
            return None;
        }
        Some(state.servers.values().any(|e| e.polled.is_none()))
    }

    /// The next batch: the least recently polled server (never polled first, then in
    /// registration order) and up to `poll_batch - 1` others of its group.
    fn pick(&self, client: &dyn CloudProvider) -> Option<Vec<PollTarget>> {
        let state = self.lock();
        let mut order: Vec<(&String, &Entry)> = state.servers.iter().collect();
        order.sort_by_key(|(_, e)| (e.polled, e.seq));
        let (first, _) = order.first()?;
        let group = client.poll_group(first);
        let limit = if group.is_some() {
            client.poll_batch().max(1)
        } else {
            READS_ALONE_PER_ROUND
        };
        let targets = order
            .iter()
            .filter(|(id, _)| group.is_none() || *id == *first || client.poll_group(id) == group)
            .take(limit)
            .map(|(id, e)| PollTarget {
                server_id: (*id).clone(),
                provision_id: e.provision_id.clone(),
            })
            .collect();
        Some(targets)
    }

    /// Hands each observation to the watches of its server, and marks it polled.
    fn deliver<'a>(&self, observations: impl Iterator<Item = (&'a str, Observation)>) {
        let now = Instant::now();
        let mut state = self.lock();
        for (id, observation) in observations {
            if let Some(entry) = state.servers.get_mut(id) {
                entry.polled = Some(now);
                entry.tx.send_replace(Some(observation));
            }
        }
    }
}

/// The poller's client: the one it holds while its grant stays valid for the margin, else
/// one on a grant issued now (`fresh`: never a cached grant).
async fn leased(
    cx: &PollContext,
    provider: ProviderId,
    client: &mut Option<LeasedClient>,
    fresh: bool,
) -> Result<Arc<dyn CloudProvider>, ProviderError> {
    let now = (cx.clock)();
    let margin = cx.config.tuning.grant_margin;
    if !fresh && let Some(held) = client.as_ref().filter(|c| c.valid_for(now, margin)) {
        return Ok(Arc::clone(&held.client));
    }
    let purpose = format!("polling {} servers", provider.as_str());
    let taken = if fresh {
        cx.registry.lease_fresh(provider, &purpose).await
    } else {
        cx.registry.lease(provider, &purpose).await
    }
    .map_err(|e| e.into_provider_error(provider))?;
    let c = Arc::clone(&taken.client);
    *client = Some(taken);
    Ok(c)
}

/// One round: `targets` read in one call (`poll_servers`) where the cloud reads them
/// together, else each alone (`get_server`), with one fresh grant when the provider
/// refuses the held one. A target a batch did not find is read alone, which tells a server
/// that is gone from one the list did not show yet. At most `READS_ALONE_PER_ROUND` are
/// read alone; the others get no observation this round, so they come first in the next.
/// Reads alone stop at the first transient failure (a rate limit among them): the rest of
/// the round hears that failure. Returns each target's observation (`None`: not read), in
/// order, and the pause the provider asked for.
async fn round(
    cx: &PollContext,
    provider: ProviderId,
    held: &mut Option<LeasedClient>,
    client: Arc<dyn CloudProvider>,
    targets: &[PollTarget],
) -> (Vec<Option<Observation>>, Option<Duration>) {
    let mut calls = Calls {
        cx,
        provider,
        held,
        client,
        refreshed: false,
    };
    let answer = if calls.client.poll_group(&targets[0].server_id).is_some() {
        match calls.batch(targets).await {
            Ok(found) => found,
            Err(e) => return (vec![Some(e.clone()); targets.len()], e.retry_after()),
        }
    } else {
        Vec::new()
    };
    let found: HashMap<&str, &ServerInfo> = answer.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut out = Vec::with_capacity(targets.len());
    let mut halted: Option<Observation> = None;
    let mut alone = 0;
    for t in targets {
        if let Some(info) = found.get(t.server_id.as_str()) {
            out.push(Some(Observation::Seen((*info).clone())));
        } else if let Some(h) = &halted {
            out.push(Some(h.clone()));
        } else if alone == READS_ALONE_PER_ROUND {
            out.push(None);
        } else {
            alone += 1;
            let observed = calls.alone(&t.server_id).await;
            if matches!(&observed, Observation::Failed(_)) {
                halted = Some(observed.clone());
            }
            out.push(Some(observed));
        }
    }
    let asked = halted.and_then(|h| h.retry_after());
    (out, asked)
}

/// The provider calls of one round, and its one grant refresh.
struct Calls<'a> {
    cx: &'a PollContext,
    provider: ProviderId,
    held: &'a mut Option<LeasedClient>,
    client: Arc<dyn CloudProvider>,
    refreshed: bool,
}

impl Calls<'_> {
    /// `targets` in one call; an answer that is not the servers is each target's
    /// observation. A scope that is gone (a zone, a region) finds nothing: each is then
    /// read alone. A batch the cloud rejects fails no provision: it is polled again.
    async fn batch(&mut self, targets: &[PollTarget]) -> Result<Vec<ServerInfo>, Observation> {
        let cp = self.cx.config.control_plane_id.as_str();
        loop {
            let e = match self.client.poll_servers(cp, targets).await {
                Ok(found) => return Ok(found),
                Err(e) => e,
            };
            if self.refresh(&e).await? {
                continue;
            }
            debug!(provider = self.provider.as_str(), servers = targets.len(), error = %e, "polling failed; will poll again");
            return match e.kind {
                ErrorKind::NotFound => Ok(Vec::new()),
                ErrorKind::Unauthorized => Err(Observation::Refused(e)),
                _ => Err(Observation::Failed(e)),
            };
        }
    }

    /// One server, alone.
    async fn alone(&mut self, server_id: &str) -> Observation {
        loop {
            let e = match self.client.get_server(server_id).await {
                Ok(info) => return Observation::Seen(info),
                Err(e) => e,
            };
            match self.refresh(&e).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(failed) => return failed,
            }
            return if e.kind == ErrorKind::NotFound {
                Observation::Gone(e)
            } else {
                failure(&e)
            };
        }
    }

    /// Replaces the client with one on a fresh grant, once per round, when the provider
    /// refused the held grant: true when the call is worth making again.
    async fn refresh(&mut self, e: &ProviderError) -> Result<bool, Observation> {
        if !e.is_grant_refused() || self.refreshed {
            return Ok(false);
        }
        self.refreshed = true;
        info!(provider = self.provider.as_str(), error = %e, "the provider refused the grant; polling with a fresh one");
        match leased(self.cx, self.provider, self.held, true).await {
            Ok(c) => {
                self.client = c;
                Ok(true)
            }
            Err(e) => Err(failure(&e)),
        }
    }
}

impl Observation {
    /// The pause the provider asked for with a failure.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            Observation::Seen(_) => None,
            Observation::Gone(e) | Observation::Refused(e) | Observation::Failed(e) => {
                e.retry_after
            }
        }
    }
}

/// `e` as an observation: for good when asking again cannot help.
fn failure(e: &ProviderError) -> Observation {
    if matches!(e.kind, ErrorKind::Unauthorized | ErrorKind::InvalidRequest) {
        Observation::Refused(e.clone())
    } else {
        Observation::Failed(e.clone())
    }
}
