//! The orphan sweeper: a periodic pass that retries the deletion of every pending orphan,
//! then lists, per provider with a credential, the servers carrying this control plane's
//! label and records those whose provision failed or is unknown here. Servers of a failed
//! provision are deleted once the grace period (`ProvisionerConfig::sweep_grace`) has
//! passed since it failed; unknown ones are only listed unless the operator opted in
//! (`WorkflowTuning::sweep_unknown_servers`), and then also wait out the grace from their
//! first sighting. A server of a provision that is in flight or `ready`, of an enrolled
//! node, of a provision kept on failure, or of an adopted orphan is never touched, and a
//! server without our label is never listed. Every deletion goes through
//! `delete_provision_resources` with a client built for that attempt, and deleting what is
//! gone succeeds, so two replicas sweeping at once only repeat harmless calls.
use std::collections::HashSet;
use std::sync::Arc;

use time::OffsetDateTime;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use super::failure::describe;
use super::undo::delete_provision_resources;
use super::{Shared, Workflow};
use crate::model::ports::StoreError;
use crate::model::provision::{ProvisionId, ProvisionStatus};
use crate::model::{Orphan, OrphanId, OrphanReason, OrphanState};
use levelrail_clouds::registry::RegistryError;
use levelrail_clouds::{Ownership, ProviderError, ProviderId, ServerInfo};

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Orphans recorded or found again by the listing.
    pub recorded: usize,
    /// Orphans deleted at their provider.
    pub deleted: usize,
    /// Deletion attempts that failed (retried by the next sweep).
    pub failed: usize,
}

/// The orphan sweeper of one control-plane process.
#[derive(Clone)]
pub struct Sweeper {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sweeper").finish_non_exhaustive()
    }
}

impl Workflow {
    /// The orphan sweeper sharing this engine's store, registry and configuration.
    pub fn sweeper(&self) -> Sweeper {
        Sweeper {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// What protects a server from the sweeper, read once per sweep.
struct Protected {
    /// Provisions with an enrolled node.
    enrolled: HashSet<String>,
    /// Provisions with an adopted orphan.
    adopted: HashSet<String>,
    /// Provisions with a pending orphan recorded without a server id (an undo that gave
    /// up before the create answered): that record deletes by label, so a listed server
    /// of the same provision is not recorded a second time.
    by_label: HashSet<String>,
}

impl Protected {
    fn covers(&self, provision_id: &str) -> bool {
        self.enrolled.contains(provision_id) || self.adopted.contains(provision_id)
    }
}

impl Sweeper {
    /// Sweeps now and then every `WorkflowTuning::sweep_interval`, until the handle is
    /// aborted.
    pub fn spawn(&self) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let report = this.sweep().await;
                if report != SweepReport::default() {
                    info!(?report, "orphan sweep done");
                }
                tokio::time::sleep(this.shared.cx.config.tuning.sweep_interval).await;
            }
        })
    }

    /// One sweep. A store that fails ends it early (logged); the next one starts over.
    pub async fn sweep(&self) -> SweepReport {
        let mut report = SweepReport::default();
        if let Err(e) = self.sweep_into(&mut report).await {
            warn!(error = %e, "the orphan sweep stopped early");
        }
        report
    }

    /// One deletion attempt of `orphan` at its provider, now, with a fresh client; the
    /// stored orphan afterwards (`deleted`, or still in its state with the error). `None`
    /// when it changed state meanwhile.
    pub async fn delete(&self, orphan: &Orphan) -> Result<Option<Orphan>, StoreError> {
        let outcome = self.delete_at_provider(orphan).await;
        let error = outcome.as_ref().err().map(|e| {
            format!(
                "could not delete the server: {}",
                describe(e, &orphan.region)
            )
        });
        match &error {
            None => {
                info!(orphan = %orphan.id, provider = %orphan.provider, "orphaned server deleted")
            }
            Some(e) => {
                warn!(orphan = %orphan.id, provider = %orphan.provider, error = %e, "could not delete an orphaned server")
            }
        }
        self.shared
            .cx
            .orphans
            .record_orphan_attempt(
                &orphan.id,
                orphan.state,
                self.shared.now(),
                error.as_deref(),
            )
            .await
    }

    async fn sweep_into(&self, report: &mut SweepReport) -> Result<(), StoreError> {
        let orphans = self.shared.cx.orphans.list_orphans().await?;
        let protected = self.protected(&orphans).await?;
        let mut tried = HashSet::new();
        for orphan in orphans {
            if orphan.state == OrphanState::Pending && self.due(&orphan, &protected) {
                tried.insert(orphan.id.clone());
                self.attempt(&orphan, report).await?;
            }
        }
        for provider in ProviderId::ALL {
            if self.shared.cx.registry.supports(provider) {
                self.sweep_provider(provider, &protected, &tried, report)
                    .await?;
            }
        }
        Ok(())
    }

    /// Whether a pending orphan is to be deleted now.
    fn due(&self, orphan: &Orphan, protected: &Protected) -> bool {
        if protected.covers(&orphan.provision_id) || !self.backed_off(orphan) {
            return false;
        }
        match orphan.reason {
            OrphanReason::UndoGaveUp | OrphanReason::FailedProvision => true,
            OrphanReason::UnknownProvision => {
                self.shared.cx.config.tuning.sweep_unknown_servers
                    && self.past_grace(orphan.first_seen)
            }
        }
    }

    /// Whether enough time passed since the last failed attempt: the sweep interval, doubling
    /// with the attempts up to 16 intervals, so a server that cannot be deleted is not hit
    /// on every sweep of every replica.
    fn backed_off(&self, orphan: &Orphan) -> bool {
        if orphan.last_error.is_none() {
            return true;
        }
        let interval = self.shared.cx.config.tuning.sweep_interval;
        let wait = interval * 2u32.pow(orphan.attempts.clamp(1, 5) - 1);
        self.shared.now() >= orphan.updated_at + wait
    }

    fn past_grace(&self, since: OffsetDateTime) -> bool {
        self.shared.now() >= since + self.shared.cx.config.sweep_grace()
    }

    async fn attempt(&self, orphan: &Orphan, report: &mut SweepReport) -> Result<(), StoreError> {
        match self.delete(orphan).await? {
            Some(o) if o.state == OrphanState::Deleted => report.deleted += 1,
            Some(_) => report.failed += 1,
            None => {}
        }
        Ok(())
    }

    /// What protects a server, from the nodes and `orphans` (read once per sweep).
    async fn protected(&self, orphans: &[Orphan]) -> Result<Protected, StoreError> {
        let nodes = self
            .shared
            .cx
            .nodes
            .list_nodes()
            .await
            .map_err(|e| StoreError::Corrupt(format!("the nodes could not be listed: {e}")))?;
        let with = |keep: fn(&Orphan) -> bool| -> HashSet<String> {
            orphans
                .iter()
                .filter(|o| keep(o))
                .map(|o| o.provision_id.clone())
                .collect()
        };
        Ok(Protected {
            enrolled: nodes.into_iter().filter_map(|n| n.provision_id).collect(),
            adopted: with(|o| o.state == OrphanState::Adopted),
            by_label: with(|o| o.state == OrphanState::Pending && o.server_id.is_none()),
        })
    }

    /// Lists `provider`'s labelled servers and handles each. A provider without a
    /// credential, or whose listing fails, is skipped until the next sweep.
    async fn sweep_provider(
        &self,
        provider: ProviderId,
        protected: &Protected,
        tried: &HashSet<OrphanId>,
        report: &mut SweepReport,
    ) -> Result<(), StoreError> {
        let servers = match self.list_labelled(provider).await {
            Ok(servers) => servers,
            Err(SkipProvider::NoCredential) => return Ok(()),
            Err(SkipProvider::Failed(e)) => {
                warn!(%provider, error = %e, "could not list servers for the orphan sweep");
                return Ok(());
            }
        };
        for server in servers {
            let Some(orphan) = self.classify(provider, server, protected).await? else {
                continue;
            };
            let orphan = self.shared.cx.orphans.record_orphan(&orphan).await?;
            report.recorded += 1;
            if orphan.state == OrphanState::Pending
                && !tried.contains(&orphan.id)
                && self.backed_off(&orphan)
                && self.due_listed(&orphan)
            {
                self.attempt(&orphan, report).await?;
            }
        }
        Ok(())
    }

    /// A listed orphan of a failed provision was already judged past its grace.
    fn due_listed(&self, orphan: &Orphan) -> bool {
        orphan.reason != OrphanReason::UnknownProvision
            || (self.shared.cx.config.tuning.sweep_unknown_servers
                && self.past_grace(orphan.first_seen))
    }

    async fn list_labelled(&self, provider: ProviderId) -> Result<Vec<ServerInfo>, SkipProvider> {
        let leased = match self
            .shared
            .cx
            .registry
            .lease(provider, "sweep orphaned servers")
            .await
        {
            Ok(leased) => leased,
            Err(RegistryError::Broker(e)) => {
                debug!(%provider, error = %e, "no credential; not swept");
                return Err(SkipProvider::NoCredential);
            }
            Err(e) => return Err(SkipProvider::Failed(e.into_provider_error(provider))),
        };
        leased
            .client
            .list_servers(&self.shared.cx.config.control_plane_id)
            .await
            .map_err(SkipProvider::Failed)
    }

    /// The orphan a listed server is, if it is one: its provision failed (past the grace,
    /// not kept on failure) or is unknown here. `None` for everything to leave alone.
    async fn classify(
        &self,
        provider: ProviderId,
        server: ServerInfo,
        protected: &Protected,
    ) -> Result<Option<Orphan>, StoreError> {
        let Some(provision_id) = server.provision_id.clone() else {
            return Ok(None);
        };
        if protected.covers(&provision_id) || protected.by_label.contains(&provision_id) {
            return Ok(None);
        }
        let record = match ProvisionId::parse(&provision_id) {
            Ok(id) => self.shared.store.get_provision(&id).await?,
            Err(_) => None,
        };
        let (reason, region) = match record {
            None => (OrphanReason::UnknownProvision, String::new()),
            Some(r) if r.status == ProvisionStatus::Failed && !r.keep_on_failure => {
                if !self.past_grace(r.updated_at) {
                    return Ok(None);
                }
                (OrphanReason::FailedProvision, r.region_in_use().to_owned())
            }
            Some(_) => return Ok(None),
        };
        let now = self.shared.now();
        Ok(Some(Orphan {
            id: OrphanId::generate(),
            provider,
            server_id: Some(server.id),
            provision_id,
            node_name: server.name,
            region,
            reason,
            first_seen: now,
            attempts: 0,
            last_error: None,
            state: OrphanState::Pending,
            updated_at: now,
        }))
    }

    async fn delete_at_provider(&self, orphan: &Orphan) -> Result<(), ProviderError> {
        let purpose = format!("delete orphaned server {}", orphan.id);
        let leased = self
            .shared
            .cx
            .registry
            .lease(orphan.provider, &purpose)
            .await
            .map_err(|e| e.into_provider_error(orphan.provider))?;
        let ownership = Ownership {
            control_plane: self.shared.cx.config.control_plane_id.clone(),
            provision_id: orphan.provision_id.clone(),
            node_name: orphan.node_name.clone(),
        };
        delete_provision_resources(
            leased.client.as_ref(),
            orphan.server_id.as_deref(),
            &ownership,
        )
        .await
    }
}

/// Why a provider is left out of a sweep.
enum SkipProvider {
    NoCredential,
    Failed(ProviderError),
}
