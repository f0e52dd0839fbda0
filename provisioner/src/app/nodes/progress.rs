//! Install progress from a booting node: authenticated by the provision's own progress
//! credential (never the join token), recorded once per step, and pushed to the workflow.
use std::fmt;
use std::sync::Arc;

use tracing::{info, warn};

use super::Nodes;
use crate::app::error::{AuthFailure, NodesError};
use crate::model::ports::ProvisionStore;
use crate::model::provision::{ProgressCredential, ProvisionId, ProvisionStatus, SealingKey};
use crate::model::{InstallReport, InstallStep, clean_node_error};

/// Decides whether a progress credential may report: it must verify under the sealing
/// key, and its provision must still be in flight (not `ready`, not terminal).
pub struct ProgressAuthority {
    key: SealingKey,
    provisions: Arc<dyn ProvisionStore>,
}

impl fmt::Debug for ProgressAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressAuthority").finish_non_exhaustive()
    }
}

impl ProgressAuthority {
    /// An authority over the provisions of `provisions`, whose credentials `key` derives.
    pub fn new(key: SealingKey, provisions: Arc<dyn ProvisionStore>) -> Self {
        Self { key, provisions }
    }

    /// The credential's claim, when it is one this control plane derived: its MAC checked
    /// under the sealing key, without reading the store.
    fn verify(&self, credential: &str) -> Result<ProvisionId, NodesError> {
        ProgressCredential::parse(credential)
            .filter(|c| c.verifies_under(&self.key))
            .map(|c| c.provision_id)
            .ok_or_else(|| refuse(None, AuthFailure::ProgressUnknown))
    }

    /// The provision `credential` may report for.
    async fn authorize(&self, credential: &str) -> Result<ProvisionId, NodesError> {
        let id = self.verify(credential)?;
        let record = self.provisions.get_provision(&id).await?;
        match record {
            None => Err(refuse(Some(&id), AuthFailure::ProgressUnknown)),
            Some(r) if r.status == ProvisionStatus::Ready || r.status.is_terminal() => {
                Err(refuse(Some(&id), AuthFailure::ProgressClosed))
            }
            Some(_) => Ok(id),
        }
    }
}

fn refuse(id: Option<&ProvisionId>, reason: AuthFailure) -> NodesError {
    warn!(provision = ?id.map(ProvisionId::as_str), reason = reason.as_str(), "progress report refused");
    NodesError::unauthenticated(reason)
}

impl Nodes {
    /// Lets booting nodes report their install steps, authorized by `authority`.
    pub fn with_progress_authority(mut self, authority: ProgressAuthority) -> Self {
        self.progress = Some(Arc::new(authority));
        self
    }

    /// Refuses a progress credential this control plane never derived (its MAC does not
    /// verify), without reading the store: the endpoint calls it before it reads a
    /// request's body. [`Nodes::report_progress`] checks the rest (the provision exists and
    /// is in flight).
    pub fn check_progress_credential(&self, credential: &str) -> Result<(), NodesError> {
        let authority = self.progress.as_ref().ok_or_else(|| {
            NodesError::FailedPrecondition("this control plane takes no progress reports".into())
        })?;
        authority.verify(credential).map(|_| ())
    }

    /// Records an install step (or, with `error`, its failure: the provision then fails
    /// at once) reported with a provision's progress credential. A join token is refused:
    /// its only use is Enroll.
    pub async fn report_progress(
        &self,
        credential: &str,
        step: InstallStep,
        error: Option<&str>,
    ) -> Result<(), NodesError> {
        let authority = self.progress.as_ref().ok_or_else(|| {
            NodesError::FailedPrecondition("this control plane takes no progress reports".into())
        })?;
        let provision_id = authority.authorize(credential).await?;
        let error = error.map(clean_node_error).filter(|e| !e.is_empty());
        let now = self.now();
        self.store
            .record_install_progress(provision_id.as_str(), step, now, error.as_deref())
            .await?;
        match &error {
            None => {
                info!(provision = %provision_id, step = step.as_str(), "install progress reported")
            }
            Some(e) => {
                warn!(provision = %provision_id, step = step.as_str(), error = %e, "install step failed on the node")
            }
        }
        if let Some(listener) = &self.listener {
            listener.install_progress(provision_id.as_str(), step);
        }
        Ok(())
    }

    /// The install steps a provision's node reported, in step order.
    pub async fn install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, NodesError> {
        Ok(self.store.list_install_progress(provision_id).await?)
    }
}
