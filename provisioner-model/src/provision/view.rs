//! A provision as the operator sees it: no token, no saga internals, no lease.
use time::OffsetDateTime;

use super::{Placement, ProvisionId, ProvisionStatus, SagaStep, StageTiming};
use crate::provision::ProvisionRecord;
use crate::{InstallStep, NodeId, NodeName, Role};
use levelrail_types::ProviderId;

/// The public view of a provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provision {
    /// `npv_…`.
    pub id: ProvisionId,
    /// The cloud.
    pub provider: ProviderId,
    /// Region id.
    pub region: String,
    /// Size id.
    pub size: String,
    /// Node name.
    pub name: NodeName,
    pub role: Role,
    /// Where it stands.
    pub status: ProvisionStatus,
    /// The latest cloud-init step reported.
    pub install_step: Option<InstallStep>,
    /// Public address, once known.
    pub ip_address: Option<String>,
    /// The enrolled node, once ready.
    pub node_id: Option<NodeId>,
    /// The phase that failed.
    pub failed_phase: Option<ProvisionStatus>,
    /// One clean line.
    pub failure_reason: Option<String>,
    /// The provider's error code, when a provider call failed.
    pub provider_error_code: Option<String>,
    /// When it was requested.
    pub created_at: OffsetDateTime,
    /// When it last changed.
    pub updated_at: OffsetDateTime,
    /// Strictly increasing with every committed change.
    pub generation: u64,
    /// When each stage was entered.
    pub stages: Vec<StageTiming>,
    /// Whether resources are kept on failure.
    pub keep_on_failure: bool,
    /// The region/size choices in order, and what became of each.
    pub placements: Vec<Placement>,
    /// The server's id at the provider, once its create answered.
    pub server_id: Option<String>,
    /// The forward steps completed, in order, with when.
    pub steps: Vec<StepDone>,
    /// What the cleanup of a failure did; `None` while nothing failed.
    pub cleanup: Option<Cleanup>,
}

/// A forward step of the saga that completed, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepDone {
    pub step: SagaStep,
    pub at: OffsetDateTime,
}

/// What the cleanup of a failed provision did with the server (and its dedicated firewall
/// and keys) and with the join token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleanup {
    pub server: CleanupOutcome,
    pub join_token: CleanupOutcome,
}

/// What became of one resource in a cleanup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupOutcome {
    /// Nothing was created, so there was nothing to delete.
    NotNeeded,
    /// Still to do: the cleanup is under way.
    Pending,
    /// Deleted (or revoked).
    Deleted,
    /// Kept, as the provision asked (`keep_on_failure`).
    Kept,
    /// Given up, with why (the orphan sweeper finds the server later).
    Failed(String),
}

/// The saga's names of the two undo actions.
const UNDO_SERVER: &str = "create_server";
const UNDO_TOKEN: &str = "mint_join_token";

impl Cleanup {
    /// The cleanup of `r` so far; `None` when nothing failed.
    fn of(r: &ProvisionRecord) -> Option<Cleanup> {
        let failure = r.saga.failure.as_ref()?;
        let undone = |name| r.saga.is_undone(name);
        let server = if r.saga.create_attempts == 0 {
            CleanupOutcome::NotNeeded
        } else if r.keep_on_failure && !failure.cancelled {
            CleanupOutcome::Kept
        } else if undone(UNDO_SERVER) {
            // Only the server's undo can give up (the token's is retried until done).
            match r.saga.cleanup_errors.first() {
                Some(why) => CleanupOutcome::Failed(why.clone()),
                None => CleanupOutcome::Deleted,
            }
        } else {
            CleanupOutcome::Pending
        };
        let join_token = if undone(UNDO_TOKEN) {
            CleanupOutcome::Deleted
        } else {
            CleanupOutcome::Pending
        };
        Some(Cleanup { server, join_token })
    }
}

/// The completed forward steps of `r`, in order (a record whose time does not read is left
/// out: the log is ours, so that is only ever a row from a future version).
fn steps_done(r: &ProvisionRecord) -> Vec<StepDone> {
    r.saga
        .completed
        .iter()
        .filter_map(|o| {
            Some(StepDone {
                step: SagaStep::from_name(&o.step)?,
                at: OffsetDateTime::parse(&o.at, &time::format_description::well_known::Rfc3339)
                    .ok()?,
            })
        })
        .collect()
}

impl Provision {
    /// Whether `other` shows the same thing to an operator (everything but the generation
    /// and the update time, which also move for internal bookkeeping).
    pub fn same_view(&self, other: &Provision) -> bool {
        let strip = |p: &Provision| Provision {
            generation: 0,
            updated_at: p.created_at,
            ..p.clone()
        };
        strip(self) == strip(other)
    }
}

impl From<&ProvisionRecord> for Provision {
    fn from(r: &ProvisionRecord) -> Self {
        // The region and size shown are the choice in use (or being tried).
        let (region, size) = r.placement_in_use();
        Provision {
            id: r.id.clone(),
            provider: r.provider,
            region: region.to_owned(),
            size: size.to_owned(),
            name: r.name.clone(),
            role: r.role,
            status: r.status,
            install_step: r.install_step,
            ip_address: r.ip_address.clone(),
            node_id: r.node_id.clone(),
            failed_phase: r.failed_phase,
            failure_reason: r.failure_reason.clone(),
            provider_error_code: r.provider_error_code.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            generation: r.generation,
            stages: r.stages.clone(),
            keep_on_failure: r.keep_on_failure,
            placements: r.saga.placements.clone(),
            server_id: r.provider_server_id.clone(),
            steps: steps_done(r),
            cleanup: Cleanup::of(r),
        }
    }
}
