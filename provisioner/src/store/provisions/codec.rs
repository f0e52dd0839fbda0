//! Column encodings of provision rows: JSON for the saga log, the stages and the SSH keys,
//! text for enums, and the decoding of a row into a record (anything unexpected is
//! `Corrupt`, naming the column only).
use levelrail_db::{Dialect, Row, Value as Arg, args, format_timestamp};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::model::ports::StoreError;
use crate::model::provision::ProvisionRecord;
use crate::model::provision::{ProvisionId, ProvisionStatus, SagaLog, SagaStep, StageTiming};
use crate::model::{InstallStep, JoinTokenId, NodeId, NodeName, Role};
use levelrail_types::ProviderId;

/// The columns of the provisions table every provision query selects (with `created_at`
/// and `updated_at`, and the lease's `lease_owner` and `lease_until` from
/// `provision_leases`), in `read_provision`'s terms.
macro_rules! provision_columns {
    () => {
        "id, provider, region, size, name, role, status, install_step, ip_address, node_id, \
         failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, \
         sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, \
         ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, \
         generation, lease_epoch"
    };
}
pub(super) use provision_columns;

/// The JSON columns of a record.
pub(super) struct Encoded {
    saga: String,
    stages: String,
    ssh_public_keys: String,
    generation: i64,
    lease_epoch: i64,
}

impl Encoded {
    pub(super) fn of(r: &ProvisionRecord) -> Result<Self, StoreError> {
        let stages = r
            .stages
            .iter()
            .map(|s| {
                let at = format_timestamp(s.entered_at)
                    .ok_or_else(|| StoreError::Corrupt("a stage time is out of range".into()))?;
                Ok(json!({"status": s.status.as_str(), "entered_at": at}))
            })
            .collect::<Result<Vec<Value>, StoreError>>()?;
        Ok(Encoded {
            saga: serde_json::to_string(&r.saga)
                .map_err(|_| StoreError::Corrupt("the saga log could not be encoded".into()))?,
            stages: Value::from(stages).to_string(),
            ssh_public_keys: Value::from(r.ssh_public_keys.clone()).to_string(),
            generation: i64::try_from(r.generation)
                .map_err(|_| StoreError::Corrupt("generation out of range".into()))?,
            lease_epoch: i64::try_from(r.lease_epoch)
                .map_err(|_| StoreError::Corrupt("lease epoch out of range".into()))?,
        })
    }

    /// The generation the stored row must have for an update of this record to apply.
    pub(super) fn previous_generation(&self) -> i64 {
        self.generation - 1
    }

    /// The columns from `status` to `sealed_join_token`, in table order: what a step of
    /// the workflow changes.
    fn progress_columns(r: &ProvisionRecord) -> [Arg; 10] {
        args![
            r.status.as_str(),
            r.install_step.map(|s| s.as_str()),
            r.ip_address.as_deref(),
            r.node_id.as_ref().map(NodeId::as_str),
            r.failed_phase.map(|s| s.as_str()),
            r.failure_reason.as_deref(),
            r.provider_error_code.as_deref(),
            r.provider_server_id.as_deref(),
            r.join_token_id.as_ref().map(JoinTokenId::as_str),
            r.sealed_join_token.as_deref(),
        ]
    }

    /// Every column of `provision_columns!()` plus `created_at, updated_at` (`$1`…`$31` of
    /// an insert), then the lease: `lease_owner, lease_until` (`$32`, `$33`).
    pub(super) fn all_columns(&self, r: &ProvisionRecord) -> Vec<Arg> {
        let head = args![
            r.id.as_str(),
            r.provider.as_str(),
            r.region.as_str(),
            r.size.as_str(),
            r.name.as_str(),
            r.role.as_str(),
        ];
        let tail = args![
            r.request_id.as_deref(),
            r.keep_on_failure,
            r.cancel_requested,
            self.ssh_public_keys.as_str(),
            r.ssh_source_cidr.as_deref(),
            r.image.as_deref(),
            r.control_plane_addr.as_str(),
            r.credential_id.as_str(),
            r.saga_step.as_str(),
            self.saga.as_str(),
            self.stages.as_str(),
            self.generation,
            self.lease_epoch,
            r.created_at,
            r.updated_at,
            r.lease_owner.as_deref(),
            r.lease_until,
        ];
        head.into_iter()
            .chain(Self::progress_columns(r))
            .chain(tail)
            .collect()
    }

    /// The columns an update writes, in the order of the `UPDATE` statement: status …
    /// updated_at (16 values), the id, and the generation and lease epoch the row must
    /// still have.
    pub(super) fn update_columns(&self, r: &ProvisionRecord) -> Vec<Arg> {
        let tail = args![
            r.cancel_requested,
            r.saga_step.as_str(),
            self.saga.as_str(),
            self.stages.as_str(),
            self.generation,
            r.updated_at,
            r.id.as_str(),
            self.previous_generation(),
            self.lease_epoch,
        ];
        Self::progress_columns(r).into_iter().chain(tail).collect()
    }
}

fn corrupt(column: &str) -> StoreError {
    StoreError::Corrupt(format!("provisions.{column} holds an invalid value"))
}

fn timestamp(text: &str, column: &str) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::parse(text, &Rfc3339).map_err(|_| corrupt(column))
}

fn parse<T>(
    value: Option<String>,
    column: &str,
    f: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, StoreError> {
    value
        .map(|v| f(&v).ok_or_else(|| corrupt(column)))
        .transpose()
}

fn stages(json: &str) -> Result<Vec<StageTiming>, StoreError> {
    let items: Vec<Value> = serde_json::from_str(json).map_err(|_| corrupt("stages"))?;
    items
        .iter()
        .map(|item| {
            let status = item["status"].as_str().and_then(ProvisionStatus::from_name);
            let at = item["entered_at"].as_str().map(|t| timestamp(t, "stages"));
            match (status, at) {
                (Some(status), Some(at)) => Ok(StageTiming {
                    status,
                    entered_at: at?,
                }),
                _ => Err(corrupt("stages")),
            }
        })
        .collect()
}

/// Decodes a provision row selected with `provision_columns!()` plus `lease_owner`,
/// `lease_until`, `created_at` and `updated_at`.
pub(super) fn read_provision(row: &Row) -> Result<ProvisionRecord, StoreError> {
    let text = |name: &str| row.text(name);
    let opt = |name: &str| row.opt_text(name);
    let saga: SagaLog = serde_json::from_str(&text("saga")?).map_err(|_| corrupt("saga"))?;
    let keys: Vec<String> =
        serde_json::from_str(&text("ssh_public_keys")?).map_err(|_| corrupt("ssh_public_keys"))?;
    Ok(ProvisionRecord {
        id: ProvisionId::parse(&text("id")?).map_err(|_| corrupt("id"))?,
        provider: text("provider")?
            .parse::<ProviderId>()
            .map_err(|_| corrupt("provider"))?,
        region: text("region")?,
        size: text("size")?,
        name: NodeName::parse(&text("name")?).map_err(|_| corrupt("name"))?,
        role: Role::from_name(&text("role")?).ok_or_else(|| corrupt("role"))?,
        status: ProvisionStatus::from_name(&text("status")?).ok_or_else(|| corrupt("status"))?,
        install_step: parse(opt("install_step")?, "install_step", |s| {
            InstallStep::parse(s).ok()
        })?,
        ip_address: opt("ip_address")?,
        node_id: parse(opt("node_id")?, "node_id", |s| NodeId::parse(s).ok())?,
        failed_phase: parse(
            opt("failed_phase")?,
            "failed_phase",
            ProvisionStatus::from_name,
        )?,
        failure_reason: opt("failure_reason")?,
        provider_error_code: opt("provider_error_code")?,
        provider_server_id: opt("provider_server_id")?,
        join_token_id: parse(opt("join_token_id")?, "join_token_id", |s| {
            JoinTokenId::parse(s).ok()
        })?,
        sealed_join_token: row.opt_bytes("sealed_join_token")?,
        request_id: opt("request_id")?,
        keep_on_failure: row.bool("keep_on_failure")?,
        cancel_requested: row.bool("cancel_requested")?,
        ssh_public_keys: keys,
        ssh_source_cidr: opt("ssh_source_cidr")?,
        image: opt("image")?,
        control_plane_addr: text("control_plane_addr")?,
        credential_id: text("credential_id")?,
        saga_step: SagaStep::from_name(&text("saga_step")?).ok_or_else(|| corrupt("saga_step"))?,
        saga,
        stages: stages(&text("stages")?)?,
        generation: u64::try_from(row.int("generation")?).map_err(|_| corrupt("generation"))?,
        lease_owner: opt("lease_owner")?,
        lease_epoch: lease_epoch(row)?,
        lease_until: row.opt_time("lease_until")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
    })
}

/// The `lease_epoch` column of `row`.
pub(super) fn lease_epoch(row: &Row) -> Result<u64, StoreError> {
    u64::try_from(row.int("lease_epoch")?).map_err(|_| corrupt("lease_epoch"))
}

/// Whether an insert failed on the unique request id.
pub(super) fn is_request_conflict<D: Dialect>(e: &sqlx::Error) -> bool {
    D::unique_violation(e).is_some_and(|v| v.is("provisions", &["request_id"]))
}

/// The stored `holder_kind`/`holder_id` pair as a holder.
pub(super) fn claim_holder(
    kind: &str,
    id: &str,
) -> Result<crate::model::provision::ClaimHolder, StoreError> {
    let bad = || StoreError::Corrupt("name_claims holds an invalid holder".into());
    match kind {
        "provision" => Ok(crate::model::provision::ClaimHolder::Provision(
            ProvisionId::parse(id).map_err(|_| bad())?,
        )),
        "node" => Ok(crate::model::provision::ClaimHolder::Node(
            NodeId::parse(id).map_err(|_| bad())?,
        )),
        _ => Err(bad()),
    }
}
