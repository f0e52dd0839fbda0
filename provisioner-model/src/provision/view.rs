//! A provision as the operator sees it: no token, no saga internals, no lease.
use time::OffsetDateTime;

use super::{Placement, ProvisionId, ProvisionStatus, StageTiming};
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
        }
    }
}
