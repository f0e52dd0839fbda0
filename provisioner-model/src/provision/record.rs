//! The stored shape of a provision, the holder of a name claim and the rules every backend
//! applies to a write: timestamps at stored precision, the generation bumped, and a
//! terminal provision keeping neither a sealed token nor a lease.
use std::fmt;

use time::OffsetDateTime;

use crate::ports::StoreError;
use crate::provision::{
    NewProvision, ProvisionId, ProvisionStatus, SagaLog, SagaStep, StageTiming,
};
use crate::stored_time;
use crate::{InstallStep, JoinTokenId, NodeId, NodeName, Role};
use levelrail_types::ProviderId;

/// A provision row.
#[derive(Clone, PartialEq, Eq)]
pub struct ProvisionRecord {
    /// `npv_…`.
    pub id: ProvisionId,
    /// The cloud.
    pub provider: ProviderId,
    /// Region id.
    pub region: String,
    /// Size id.
    pub size: String,
    /// Node name (claimed while the provision has not failed).
    pub name: NodeName,
    /// Role of the node.
    pub role: Role,
    /// Where it stands.
    pub status: ProvisionStatus,
    /// Latest cloud-init step.
    pub install_step: Option<InstallStep>,
    /// Public address.
    pub ip_address: Option<String>,
    /// The enrolled node.
    pub node_id: Option<NodeId>,
    /// The phase that failed.
    pub failed_phase: Option<ProvisionStatus>,
    /// One clean line.
    pub failure_reason: Option<String>,
    pub provider_error_code: Option<String>,
    /// The provider's server id, once a create returned.
    pub provider_server_id: Option<String>,
    /// The provision's join token.
    pub join_token_id: Option<JoinTokenId>,
    /// The join token, sealed (see `SealingKey`); `None` once terminal.
    pub sealed_join_token: Option<Vec<u8>>,
    /// The client's idempotency key.
    pub request_id: Option<String>,
    /// Keep resources after a failure.
    pub keep_on_failure: bool,
    /// The operator asked to cancel.
    pub cancel_requested: bool,
    /// OpenSSH public keys.
    pub ssh_public_keys: Vec<String>,
    /// Opt-in SSH source CIDR.
    pub ssh_source_cidr: Option<String>,
    /// Image override.
    pub image: Option<String>,
    /// The address the agent dials.
    pub control_plane_addr: String,
    /// The credential the provision acts with.
    pub credential_id: String,
    /// The saga step to run next.
    pub saga_step: SagaStep,
    /// The saga log.
    pub saga: SagaLog,
    /// When each status was entered.
    pub stages: Vec<StageTiming>,
    /// Bumped by every write; writes are conditional on it.
    pub generation: u64,
    /// The driver holding the lease.
    pub lease_owner: Option<String>,
    /// Until when.
    pub lease_until: Option<OffsetDateTime>,
    /// Bumped whenever the lease is taken anew (free, or expired, even by its last holder)
    /// or released; a renewal of a live lease keeps it. Every write is conditional on it, so
    /// a driver that lost the lease cannot write after another took over (fencing).
    pub lease_epoch: u64,
    /// When it was requested.
    pub created_at: OffsetDateTime,
    /// When it last changed.
    pub updated_at: OffsetDateTime,
}

impl ProvisionRecord {
    /// A new provision (`creating`, generation 1) for `spec`, leased to `lease_owner` until
    /// `lease_until` so its creator drives it first.
    pub fn new(
        id: ProvisionId,
        spec: &NewProvision,
        credential_id: &str,
        now: OffsetDateTime,
        lease_owner: &str,
        lease_until: OffsetDateTime,
    ) -> Self {
        ProvisionRecord {
            id,
            provider: spec.provider,
            region: spec.region.clone(),
            size: spec.size.clone(),
            name: spec.name.clone(),
            role: spec.role,
            status: ProvisionStatus::Creating,
            install_step: None,
            ip_address: None,
            node_id: None,
            failed_phase: None,
            failure_reason: None,
            provider_error_code: None,
            provider_server_id: None,
            join_token_id: None,
            sealed_join_token: None,
            request_id: spec.request_id.clone(),
            keep_on_failure: spec.keep_on_failure,
            cancel_requested: false,
            ssh_public_keys: spec.ssh_public_keys.clone(),
            ssh_source_cidr: spec.ssh_source_cidr.clone(),
            image: spec.image.clone(),
            control_plane_addr: spec.control_plane_addr.clone(),
            credential_id: credential_id.to_owned(),
            saga_step: SagaStep::MintJoinToken,
            saga: SagaLog::default(),
            stages: vec![StageTiming {
                status: ProvisionStatus::Creating,
                entered_at: now,
            }],
            generation: 1,
            lease_owner: Some(lease_owner.to_owned()),
            lease_until: Some(lease_until),
            lease_epoch: 1,
            created_at: now,
            updated_at: now,
        }
    }

    /// Records the provision's join token (the saga's first step done): its id, and the
    /// token sealed for this provision, minted `at` (RFC 3339).
    pub fn record_join_token(&mut self, token_id: &JoinTokenId, sealed: Vec<u8>, at: String) {
        self.join_token_id = Some(token_id.clone());
        self.sealed_join_token = Some(sealed);
        self.saga.complete(
            SagaStep::MintJoinToken,
            at,
            &[("token_id", token_id.as_str())],
        );
        self.saga_step = SagaStep::RenderUserData;
    }

    /// The region and size the server is in (or being created in): the first choice not
    /// rejected after a capacity fallback (the one in use once created), otherwise the
    /// requested ones.
    pub fn placement_in_use(&self) -> (&str, &str) {
        crate::provision::current(&self.saga.placements)
            .map_or((self.region.as_str(), self.size.as_str()), |p| {
                (p.region.as_str(), p.size.as_str())
            })
    }

    /// The region of [`Self::placement_in_use`].
    pub fn region_in_use(&self) -> &str {
        self.placement_in_use().0
    }

    /// The record with every timestamp at stored precision.
    pub fn stored(&self) -> Result<ProvisionRecord, StoreError> {
        let mut r = self.clone();
        r.created_at = stored_time(r.created_at)?;
        r.updated_at = stored_time(r.updated_at)?;
        r.lease_until = r.lease_until.map(stored_time).transpose()?;
        for stage in &mut r.stages {
            stage.entered_at = stored_time(stage.entered_at)?;
        }
        Ok(r)
    }

    /// What an update of this record (conditional on its generation and lease epoch)
    /// stores: the next generation, and for a terminal status no sealed token and no lease.
    pub fn next_version(&self) -> Result<ProvisionRecord, StoreError> {
        let mut r = self.stored()?;
        r.generation += 1;
        if r.status.is_terminal() {
            r.sealed_join_token = None;
            r.lease_owner = None;
            r.lease_until = None;
        }
        Ok(r)
    }
}

impl fmt::Debug for ProvisionRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvisionRecord")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("name", &self.name)
            .field("status", &self.status)
            .field("install_step", &self.install_step)
            .field("provider_server_id", &self.provider_server_id)
            .field("join_token_id", &self.join_token_id)
            .field(
                "sealed_join_token",
                &self.sealed_join_token.as_ref().map(|_| "<sealed>"),
            )
            .field("failed_phase", &self.failed_phase)
            .field("failure_reason", &self.failure_reason)
            .field("saga_step", &self.saga_step)
            .field("generation", &self.generation)
            .field("lease_owner", &self.lease_owner)
            .field("lease_epoch", &self.lease_epoch)
            .finish_non_exhaustive()
    }
}

/// Who holds a node name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimHolder {
    /// A provision that has not failed.
    Provision(ProvisionId),
    /// An enrolled node.
    Node(NodeId),
}

/// Why a provision could not be inserted.
#[derive(Debug, thiserror::Error)]
pub enum InsertProvisionError {
    /// The name is held by a node or a provision that has not failed.
    #[error("the name is already claimed")]
    NameTaken,
    /// A provision with the same request id exists: this one.
    #[error("a provision with this request id exists")]
    Replayed(Box<ProvisionRecord>),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a page of provisions continues: after this (created_at, id), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCursor {
    /// The last listed provision's creation time.
    pub created_at: OffsetDateTime,
    /// The last listed provision's id.
    pub id: ProvisionId,
}
