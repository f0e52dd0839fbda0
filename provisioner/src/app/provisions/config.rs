//! The provisioner's configuration: who this control plane is, what its nodes run and
//! dial, how long a provision may take, and the workflow's timing.
use std::time::Duration;

use super::reachability::AgentAddrPolicy;
use crate::cloudinit::AgentSource;
use crate::model::provision::SealingKey;

/// Configuration of a [`super::Provisioner`] (and its workflow).
#[derive(Debug)]
pub struct ProvisionerConfig {
    /// Identifies this control plane in the labels of what it creates.
    pub control_plane_id: String,
    /// `host:port` agents dial when a request names none (the agent listener).
    pub default_control_plane_addr: Option<String>,
    /// Which agent addresses a provision may name (loopback only where the nodes run on
    /// this machine).
    pub agent_addr_policy: AgentAddrPolicy,
    /// The agent the nodes run: this control plane's own binaries (served by the agent
    /// listener, SHA-256 pinned in the user-data) or a digest-pinned image.
    pub agent: AgentSource,
    /// `APP_NODE_PROVISION_TIMEOUT` (default 20 minutes): from the request to `ready`.
    pub timeout: Duration,
    /// The `https://` URL of the progress endpoint on the agent listener.
    pub progress_url: String,
    /// Seals join tokens at rest (from a 0600 file in the data directory).
    pub sealing_key: SealingKey,
    /// Workflow timing.
    pub tuning: WorkflowTuning,
}

impl ProvisionerConfig {
    /// How long the sweeper leaves a labelled server of a failed or unknown provision alone:
    /// `tuning.sweep_grace`, or twice the provision timeout.
    pub fn sweep_grace(&self) -> Duration {
        self.tuning.sweep_grace.unwrap_or(self.timeout * 2)
    }
}

/// The default `APP_NODE_PROVISION_TIMEOUT`.
pub const DEFAULT_PROVISION_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The default bound on provisions one replica drives at once (`--max-provisions-in-flight`).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10_000;

/// Workflow timing; the defaults suit real clouds, tests shorten them.
#[derive(Debug, Clone)]
pub struct WorkflowTuning {
    /// How long a driver's lease lasts without renewal (renewed every third of it).
    pub lease_ttl: Duration,
    /// First pause between two `get_server` polls while booting.
    pub poll_initial: Duration,
    /// Longest pause between two polls (the backoff grows by half each time).
    pub poll_max: Duration,
    /// How often a waiting driver re-reads the database without a push.
    pub db_tick: Duration,
    /// How often a watched provision is re-read for changes made on other replicas.
    pub follow_interval: Duration,
    /// How long a running server may send no progress report before `enrolling`.
    pub install_grace: Duration,
    /// How long an undo keeps retrying before what it could not delete is recorded as an
    /// orphan for the sweeper.
    pub undo_deadline: Duration,
    /// How long a provider call in flight may go on after a cancel (it is not cut midway).
    pub cancel_grace: Duration,
    /// How long `CancelProvision` waits for the unwinding before it answers.
    pub cancel_wait: Duration,
    /// A grant must still be valid this long when a provider call starts; an older one is
    /// replaced by a freshly issued grant first.
    pub grant_margin: Duration,
    /// Retries of transient provider failures.
    pub retry: RetryTuning,
    /// How often the orphan sweeper runs.
    pub sweep_interval: Duration,
    /// How long a labelled server of a failed provision (or of an unknown one, counted from
    /// its first sighting) is left alone before the sweeper deletes it; `None`: twice the
    /// provision timeout.
    pub sweep_grace: Option<Duration>,
    /// Whether the sweeper deletes labelled servers of provisions this control plane does
    /// not know (`--sweep-unknown-servers`); otherwise it only lists them.
    pub sweep_unknown_servers: bool,
    /// Provisions this replica drives at once; a `Provision` beyond it is refused with
    /// `RESOURCE_EXHAUSTED` rather than queued.
    pub max_in_flight: usize,
    /// Servers this replica renders and creates at once per cloud; the other provisions
    /// wait their turn in `creating`.
    pub creates_per_cloud: usize,
}

impl Default for WorkflowTuning {
    fn default() -> Self {
        WorkflowTuning {
            lease_ttl: Duration::from_secs(30),
            poll_initial: Duration::from_secs(2),
            poll_max: Duration::from_secs(15),
            db_tick: Duration::from_secs(5),
            follow_interval: Duration::from_secs(2),
            install_grace: Duration::from_secs(5 * 60),
            undo_deadline: Duration::from_secs(30 * 60),
            cancel_grace: Duration::from_secs(120),
            cancel_wait: Duration::from_secs(60),
            grant_margin: Duration::from_secs(180),
            retry: RetryTuning::default(),
            sweep_interval: Duration::from_secs(5 * 60),
            sweep_grace: None,
            sweep_unknown_servers: false,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            creates_per_cloud: 16,
        }
    }
}

/// How retries are paced.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryTuning {
    /// First backoff ceiling; doubles per retry (full jitter: a random pause below it).
    pub base: Duration,
    /// Largest backoff ceiling.
    pub max: Duration,
    /// Largest wait taken from a provider's `Retry-After`.
    pub max_retry_after: Duration,
    /// Retries one provision may spend over its whole life.
    pub per_provision: u32,
    /// Retries a credential may hold in reserve (every provision's draw from it)…
    pub per_credential_burst: u32,
    /// …refilled at this many per second.
    pub per_credential_refill: f64,
}

impl Default for RetryTuning {
    fn default() -> Self {
        RetryTuning {
            base: Duration::from_secs(1),
            max: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            per_provision: 200,
            per_credential_burst: 50,
            per_credential_refill: 2.0,
        }
    }
}

impl RetryTuning {
    /// The pause before retry number `retry` (1-based): a random share of the doubling
    /// ceiling, and never less than what the provider asked for (capped).
    pub fn pause(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let asked = retry_after.unwrap_or_default().min(self.max_retry_after);
        levelrail_clouds::http::full_jitter(self.base, self.max, retry).max(asked)
    }
}
