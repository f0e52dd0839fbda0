//! Column encodings of provision rows shared by the SQL backends: JSON for the saga log,
//! the stages and the SSH keys, text for enums and timestamps, and the decoding of a raw
//! row into a record (anything unexpected is `Corrupt`, naming the column only).
use serde_json::{Value, json};
use sqlx::{ColumnIndex, Decode, Row, Type};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::ProvisionRecord;
use crate::domain::provision::{ProvisionId, ProvisionStatus, SagaLog, SagaStep, StageTiming};
use crate::domain::{InstallStep, JoinTokenId, NodeId, NodeName, Role};
use crate::providers::ProviderId;
use crate::store::StoreError;
use crate::store::codec::{col, format_optional, format_timestamp};

/// The columns every provision query selects, in `read_provision`'s terms.
macro_rules! provision_columns {
    () => {
        "id, provider, region, size, name, role, status, install_step, ip_address, node_id, \
         failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, \
         sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, \
         ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, \
         generation, lease_owner"
    };
}
pub(super) use provision_columns;

/// The text forms of a record's non-text columns.
pub(super) struct Encoded {
    pub(super) saga: String,
    pub(super) stages: String,
    pub(super) ssh_public_keys: String,
    pub(super) generation: i64,
    pub(super) lease_until: Option<String>,
    pub(super) created_at: String,
    pub(super) updated_at: String,
}

impl Encoded {
    pub(super) fn of(r: &ProvisionRecord) -> Result<Self, StoreError> {
        let stages = r
            .stages
            .iter()
            .map(|s| Ok(json!({"status": s.status.as_str(), "entered_at": format_timestamp(s.entered_at)?})))
            .collect::<Result<Vec<Value>, StoreError>>()?;
        Ok(Encoded {
            saga: serde_json::to_string(&r.saga)
                .map_err(|_| StoreError::Corrupt("the saga log could not be encoded".into()))?,
            stages: Value::from(stages).to_string(),
            ssh_public_keys: Value::from(r.ssh_public_keys.clone()).to_string(),
            generation: i64::try_from(r.generation)
                .map_err(|_| StoreError::Corrupt("generation out of range".into()))?,
            lease_until: format_optional(r.lease_until)?,
            created_at: format_timestamp(r.created_at)?,
            updated_at: format_timestamp(r.updated_at)?,
        })
    }
}

/// The stored name of a provider.
pub(super) fn provider_from_name(name: &str) -> Option<ProviderId> {
    ProviderId::ALL.into_iter().find(|p| p.as_str() == name)
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

/// Decodes a provision row selected with `provision_columns!()` plus `lease_until`,
/// `created_at` and `updated_at` as RFC 3339 text.
pub(super) fn read_provision<R>(row: &R) -> Result<ProvisionRecord, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<Vec<u8>>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let text = |name: &str| col::<_, String>(row, name);
    let opt = |name: &str| col::<_, Option<String>>(row, name);
    let saga: SagaLog = serde_json::from_str(&text("saga")?).map_err(|_| corrupt("saga"))?;
    let keys: Vec<String> =
        serde_json::from_str(&text("ssh_public_keys")?).map_err(|_| corrupt("ssh_public_keys"))?;
    Ok(ProvisionRecord {
        id: ProvisionId::parse(&text("id")?).map_err(|_| corrupt("id"))?,
        provider: provider_from_name(&text("provider")?).ok_or_else(|| corrupt("provider"))?,
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
        sealed_join_token: col(row, "sealed_join_token")?,
        request_id: opt("request_id")?,
        keep_on_failure: col(row, "keep_on_failure")?,
        cancel_requested: col(row, "cancel_requested")?,
        ssh_public_keys: keys,
        ssh_source_cidr: opt("ssh_source_cidr")?,
        image: opt("image")?,
        control_plane_addr: text("control_plane_addr")?,
        credential_id: text("credential_id")?,
        saga_step: SagaStep::from_name(&text("saga_step")?).ok_or_else(|| corrupt("saga_step"))?,
        saga,
        stages: stages(&text("stages")?)?,
        generation: u64::try_from(col::<_, i64>(row, "generation")?)
            .map_err(|_| corrupt("generation"))?,
        lease_owner: opt("lease_owner")?,
        lease_until: opt("lease_until")?
            .map(|t| timestamp(&t, "lease_until"))
            .transpose()?,
        created_at: timestamp(&text("created_at")?, "created_at")?,
        updated_at: timestamp(&text("updated_at")?, "updated_at")?,
    })
}

/// Whether an insert failed on the unique request id.
pub(super) fn is_request_conflict(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| {
        d.is_unique_violation()
            && (d.constraint() == Some("provisions_request_id_key")
                || d.message().contains("provisions.request_id"))
    })
}

/// The stored `holder_kind`/`holder_id` pair as a holder.
pub(super) fn claim_holder(kind: &str, id: &str) -> Result<super::ClaimHolder, StoreError> {
    let bad = || StoreError::Corrupt("name_claims holds an invalid holder".into());
    match kind {
        "provision" => Ok(super::ClaimHolder::Provision(
            ProvisionId::parse(id).map_err(|_| bad())?,
        )),
        "node" => Ok(super::ClaimHolder::Node(
            NodeId::parse(id).map_err(|_| bad())?,
        )),
        _ => Err(bad()),
    }
}

/// Binds every column of `provision_columns!()` plus `lease_until, created_at, updated_at`,
/// in that order, from a record and its encoding.
macro_rules! bind_all_columns {
    ($query:expr, $r:expr, $e:expr) => {
        $query
            .bind($r.id.as_str())
            .bind($r.provider.as_str())
            .bind($r.region.as_str())
            .bind($r.size.as_str())
            .bind($r.name.as_str())
            .bind($r.role.as_str())
            .bind($r.status.as_str())
            .bind($r.install_step.map(|s| s.as_str()))
            .bind($r.ip_address.as_deref())
            .bind($r.node_id.as_ref().map(|n| n.as_str()))
            .bind($r.failed_phase.map(|s| s.as_str()))
            .bind($r.failure_reason.as_deref())
            .bind($r.provider_error_code.as_deref())
            .bind($r.provider_server_id.as_deref())
            .bind($r.join_token_id.as_ref().map(|t| t.as_str()))
            .bind($r.sealed_join_token.as_deref())
            .bind($r.request_id.as_deref())
            .bind($r.keep_on_failure)
            .bind($r.cancel_requested)
            .bind($e.ssh_public_keys.as_str())
            .bind($r.ssh_source_cidr.as_deref())
            .bind($r.image.as_deref())
            .bind($r.control_plane_addr.as_str())
            .bind($r.credential_id.as_str())
            .bind($r.saga_step.as_str())
            .bind($e.saga.as_str())
            .bind($e.stages.as_str())
            .bind($e.generation)
            .bind($r.lease_owner.as_deref())
            .bind($e.lease_until.as_deref())
            .bind($e.created_at.as_str())
            .bind($e.updated_at.as_str())
    };
}
pub(super) use bind_all_columns;

/// Binds the columns an update writes, in the order of the backends' `UPDATE` statements:
/// status … updated_at (16 values), then whether the new status is terminal.
macro_rules! bind_update_columns {
    ($query:expr, $r:expr, $e:expr) => {
        $query
            .bind($r.status.as_str())
            .bind($r.install_step.map(|s| s.as_str()))
            .bind($r.ip_address.as_deref())
            .bind($r.node_id.as_ref().map(|n| n.as_str()))
            .bind($r.failed_phase.map(|s| s.as_str()))
            .bind($r.failure_reason.as_deref())
            .bind($r.provider_error_code.as_deref())
            .bind($r.provider_server_id.as_deref())
            .bind($r.join_token_id.as_ref().map(|t| t.as_str()))
            .bind($r.sealed_join_token.as_deref())
            .bind($r.cancel_requested)
            .bind($r.saga_step.as_str())
            .bind($e.saga.as_str())
            .bind($e.stages.as_str())
            .bind($e.generation)
            .bind($e.updated_at.as_str())
            .bind($r.status.is_terminal())
    };
}
pub(super) use bind_update_columns;
