//! The change feed: enrollment and cloud-init progress reach the provision workflow the
//! moment they happen (a push, not a poll). The workflow implements it, the node registry
//! calls it after the change committed.
use std::fmt::Debug;

use crate::model::{InstallStep, Node};

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
