//! The provisioner's configuration: who this control plane is, what its nodes run and
//! dial, how long a provision may take, and the workflow's timing.
use std::time::Duration;

use super::super::provision::SealingKey;
use super::reachability::AgentAddrPolicy;
use crate::cloudinit::AgentSource;

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

/// The default `APP_NODE_PROVISION_TIMEOUT`.
pub const DEFAULT_PROVISION_TIMEOUT: Duration = Duration::from_secs(20 * 60);

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
    /// Attempts at deleting a failed provision's server.
    pub undo_attempts: u32,
    /// First pause between two of them (doubling).
    pub undo_backoff: Duration,
    /// How long `CancelProvision` waits for the unwinding before it answers.
    pub cancel_wait: Duration,
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
            undo_attempts: 5,
            undo_backoff: Duration::from_secs(2),
            cancel_wait: Duration::from_secs(60),
        }
    }
}
