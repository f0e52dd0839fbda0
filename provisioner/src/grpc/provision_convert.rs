//! Conversion between `levelrail.provisioner.v1` messages and the provisioner's model
//! types. Proto types stop here.
use levelrail_proto::credentials::v1::Provider as PbProvider;
use levelrail_proto::provisioner::v1 as pb;

use super::convert::timestamp;
use super::provision_status::status;
use crate::model::provision::{
    Cleanup, CleanupOutcome, Placement, PlacementOutcome, Provision, ProvisionId, ProvisionInput,
    ProvisionStatus, StageTiming, StepDone,
};
use crate::model::{FieldError, InstallStep, Role};
use levelrail_clouds::{ProviderId, Region, Size};

/// The provider a request names; `None` when unspecified (the domain names the field).
pub(super) fn provider(value: i32) -> Result<Option<ProviderId>, FieldError> {
    match PbProvider::try_from(value) {
        // Unspecified names none (the model then names the missing field).
        Ok(known) => Ok(ProviderId::try_from(known).ok()),
        Err(_) => Err(FieldError::new("provider", "is not a known provider")),
    }
}

pub(super) fn provider_to_pb(p: ProviderId) -> PbProvider {
    PbProvider::from(p)
}

fn role(value: i32) -> Result<Role, FieldError> {
    match pb::Role::try_from(value) {
        Ok(pb::Role::Unspecified | pb::Role::General) => Ok(Role::General),
        Ok(pb::Role::Build) => Ok(Role::Build),
        Err(_) => Err(FieldError::new("role", "must be general or build")),
    }
}

fn role_to_pb(r: Role) -> pb::Role {
    match r {
        Role::General => pb::Role::General,
        Role::Build => pb::Role::Build,
    }
}

fn status_to_pb(s: ProvisionStatus) -> pb::ProvisionStatus {
    match s {
        ProvisionStatus::Creating => pb::ProvisionStatus::Creating,
        ProvisionStatus::Booting => pb::ProvisionStatus::Booting,
        ProvisionStatus::Installing => pb::ProvisionStatus::Installing,
        ProvisionStatus::Enrolling => pb::ProvisionStatus::Enrolling,
        ProvisionStatus::Ready => pb::ProvisionStatus::Ready,
        ProvisionStatus::Failed => pb::ProvisionStatus::Failed,
    }
}

fn install_step_to_pb(s: Option<InstallStep>) -> pb::InstallStep {
    match s {
        None => pb::InstallStep::Unspecified,
        Some(InstallStep::DockerReady) => pb::InstallStep::DockerReady,
        Some(InstallStep::AgentVerified) => pb::InstallStep::AgentVerified,
        Some(InstallStep::AgentStarted) => pb::InstallStep::AgentStarted,
    }
}

/// A `ProvisionRequest` as model input (field validation is the model's).
pub(super) fn provision_input(req: pb::ProvisionRequest) -> Result<ProvisionInput, FieldError> {
    Ok(ProvisionInput {
        provider: provider(req.provider)?,
        region: req.region,
        size: req.size,
        name: req.name,
        role: role(req.role)?,
        ssh_public_keys: req.ssh_public_keys,
        ssh_source_cidr: req.ssh_source_cidr,
        image: req.image,
        control_plane_addr: req.control_plane_addr,
        request_id: req.request_id,
        keep_on_failure: req.keep_on_failure,
        fallback_regions: req.fallback_regions,
        fallback_sizes: req.fallback_sizes,
    })
}

fn placement(p: &Placement) -> pb::Placement {
    let outcome = match p.outcome {
        PlacementOutcome::Pending => pb::PlacementOutcome::Pending,
        PlacementOutcome::InUse => pb::PlacementOutcome::InUse,
        PlacementOutcome::Rejected => pb::PlacementOutcome::Rejected,
    };
    pb::Placement {
        region: p.region.clone(),
        size: p.size.clone(),
        outcome: outcome.into(),
        reason: p.reason.clone().unwrap_or_default(),
        provider_error_code: p.code.clone().unwrap_or_default(),
    }
}

fn stage(s: &StageTiming) -> pb::StageTiming {
    pb::StageTiming {
        status: status_to_pb(s.status).into(),
        entered_at: Some(timestamp(s.entered_at)),
    }
}

fn cleanup_result(o: &CleanupOutcome) -> pb::CleanupResult {
    let (outcome, reason) = match o {
        CleanupOutcome::NotNeeded => (pb::CleanupOutcome::NotNeeded, ""),
        CleanupOutcome::Pending => (pb::CleanupOutcome::Pending, ""),
        CleanupOutcome::Deleted => (pb::CleanupOutcome::Deleted, ""),
        CleanupOutcome::Kept => (pb::CleanupOutcome::Kept, ""),
        CleanupOutcome::Failed(why) => (pb::CleanupOutcome::Failed, why.as_str()),
    };
    pb::CleanupResult {
        outcome: outcome.into(),
        reason: reason.to_owned(),
    }
}

fn cleanup(c: &Cleanup) -> pb::Cleanup {
    pb::Cleanup {
        server: Some(cleanup_result(&c.server)),
        join_token: Some(cleanup_result(&c.join_token)),
    }
}

fn step_done(s: &StepDone) -> pb::StepDone {
    pb::StepDone {
        step: s.step.as_str().to_owned(),
        at: Some(timestamp(s.at)),
    }
}

/// A provision id from a request, refused naming the field when malformed.
pub(super) fn provision_id(id: &str) -> Result<ProvisionId, tonic::Status> {
    ProvisionId::parse(id).map_err(|e| status(e.into()))
}

/// A provision as the API shows it.
pub(super) fn provision(p: Provision) -> pb::Provision {
    pb::Provision {
        id: p.id.to_string(),
        provider: provider_to_pb(p.provider).into(),
        region: p.region,
        size: p.size,
        name: p.name.to_string(),
        role: role_to_pb(p.role).into(),
        status: status_to_pb(p.status).into(),
        install_step: install_step_to_pb(p.install_step).into(),
        ip_address: p.ip_address.unwrap_or_default(),
        node_id: p.node_id.map(|n| n.to_string()).unwrap_or_default(),
        failed_phase: p
            .failed_phase
            .map_or(pb::ProvisionStatus::Unspecified, status_to_pb)
            .into(),
        failure_reason: p.failure_reason.unwrap_or_default(),
        provider_error_code: p.provider_error_code.unwrap_or_default(),
        created_at: Some(timestamp(p.created_at)),
        updated_at: Some(timestamp(p.updated_at)),
        generation: p.generation,
        stages: p.stages.iter().map(stage).collect(),
        keep_on_failure: p.keep_on_failure,
        placements: p.placements.iter().map(placement).collect(),
        server_id: p.server_id.unwrap_or_default(),
        steps: p.steps.iter().map(step_done).collect(),
        cleanup: p.cleanup.as_ref().map(cleanup),
    }
}

pub(super) fn region(r: Region) -> pb::Region {
    pb::Region {
        id: r.id,
        name: r.name,
    }
}

pub(super) fn size(s: Size) -> pb::Size {
    let price_unavailable = s.pricing.unavailable().unwrap_or_default().to_owned();
    let price = s.pricing.price().cloned();
    let (price_monthly, currency, price_basis, price_estimate) = match price {
        Some(p) => (p.monthly, p.currency, p.basis, p.estimate),
        None => Default::default(),
    };
    pb::Size {
        id: s.id,
        name: s.name,
        vcpus: s.vcpus,
        memory_mb: s.memory_mb,
        disk_gb: s.disk_gb,
        price_monthly,
        currency,
        price_basis,
        price_estimate,
        price_unavailable,
        architecture: s.architecture.as_str().to_owned(),
        unavailable_reason: s.unavailable_reason.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_enum_values_name_their_field() {
        assert_eq!(provider(99).expect_err("unknown").field, "provider");
        assert_eq!(provider(0), Ok(None));
        assert_eq!(role(7).expect_err("unknown").field, "role");
        assert_eq!(role(0), Ok(Role::General));
        assert_eq!(role(2), Ok(Role::Build));
    }

    #[test]
    fn every_provider_round_trips() {
        for p in ProviderId::ALL {
            assert_eq!(provider(provider_to_pb(p).into()), Ok(Some(p)));
        }
    }
}
