//! The change feed: enrollment and cloud-init progress reach the provision workflow the
//! moment they happen (a push, not a poll). The workflow implements it, the node registry
//! calls it after the change committed.
use std::fmt::Debug;

use async_trait::async_trait;

use super::StoreError;

use crate::{InstallStep, Node};

/// Told about enrollments and install progress. Calls must return quickly (notify a task,
/// do not wait on I/O): they run on the agent's request path.
pub trait EnrollmentListener: Send + Sync + Debug {
    /// `node` enrolled (its `provision_id` names the provision it came from, if any).
    fn node_enrolled(&self, node: &Node);
    /// A provisioned node's cloud-init reported `step`.
    fn install_progress(&self, provision_id: &str, step: InstallStep) {
        let _ = (provision_id, step);
    }
}

/// A replica's feed of the changes every replica sharing the database commits: each
/// provision whose state changed (a status, a cancel), whose node enrolled or whose
/// cloud-init reported a step, the moment the change commits.
#[async_trait]
pub trait ChangeFeed: Send + Debug {
    /// The next change, or `None` when changes may have been missed (the feed
    /// reconnected), so everything followed must be read again. An error: the feed cannot
    /// reach the database now; call again later.
    async fn next(&mut self) -> Result<Option<Change>, StoreError>;
}

/// One provision's change, as the feed announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The provision.
    pub provision_id: String,
    /// Its cancel is requested (so its driver can act without reading the row).
    pub cancel_requested: bool,
}

/// What every replica sharing a database must agree on, stored once by the first replica
/// to start: the node CA (its key sealed), the control-plane id.
#[async_trait]
pub trait SharedStateStore: Send + Sync + Debug {
    /// The value stored under `name`, after storing `value` there if there was none: every
    /// replica gets the first writer's value, however many start at once.
    async fn shared_value(&self, name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError>;
}
