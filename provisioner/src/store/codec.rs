//! Column encodings shared by the SQL backends: timestamp precision and text form, JSON
//! lists, and the decoding of raw rows into records. Anything unexpected in a row becomes
//! `StoreError::Corrupt`, naming the column but never echoing its value.
use sqlx::{ColumnIndex, Decode, Row, Type};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

use super::{JoinTokenRecord, RedeemError, StoreError};
use crate::domain::{
    InstallReport, InstallStep, JoinTokenId, Node, NodeId, NodeName, Role, WorkloadKind,
};

/// Normalises a timestamp to what every backend stores: UTC, truncated to microseconds
/// (PostgreSQL's precision). Years outside 1..=9999 are refused.
pub(crate) fn to_stored_precision(t: OffsetDateTime) -> Result<OffsetDateTime, StoreError> {
    let utc = t
        .checked_to_offset(UtcOffset::UTC)
        .filter(|u| (1..=9999).contains(&u.year()))
        .ok_or_else(|| StoreError::Corrupt("timestamp outside years 1-9999".into()))?;
    Ok(utc
        .replace_nanosecond(utc.nanosecond() / 1_000 * 1_000)
        .unwrap_or(utc))
}

/// Fixed-width UTC RFC 3339 with six fractional digits, so stored values sort as text.
pub(crate) fn format_timestamp(t: OffsetDateTime) -> Result<String, StoreError> {
    let fixed =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    to_stored_precision(t)?
        .format(&fixed)
        .map_err(|_| StoreError::Corrupt("timestamp could not be formatted".into()))
}

/// [`format_timestamp`] of an optional value.
pub(crate) fn format_optional(t: Option<OffsetDateTime>) -> Result<Option<String>, StoreError> {
    t.map(format_timestamp).transpose()
}

fn parse_timestamp(text: &str, column: &str) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|_| StoreError::Corrupt(format!("{column} is not an RFC 3339 timestamp")))
}

fn parse_optional(
    text: Option<String>,
    column: &str,
) -> Result<Option<OffsetDateTime>, StoreError> {
    text.map(|t| parse_timestamp(&t, column)).transpose()
}

/// The JSON text of a node's addresses.
pub(crate) fn addresses_json(addresses: &[String]) -> String {
    serde_json::Value::from(addresses.to_vec()).to_string()
}

/// The JSON text of a node's workload kinds (`["apps"]`).
pub(crate) fn kinds_json(kinds: &[WorkloadKind]) -> String {
    serde_json::Value::from(kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>()).to_string()
}

fn string_list(json: &str, column: &str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(json)
        .map_err(|_| StoreError::Corrupt(format!("{column} is not a JSON list of strings")))
}

/// Reads one column, reporting a type mismatch as a corrupt row (naming only the column).
pub(crate) fn col<'r, R, T>(row: &'r R, name: &str) -> Result<T, StoreError>
where
    R: Row,
    T: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    row.try_get(name)
        .map_err(|_| StoreError::Corrupt(format!("column {name} has an unexpected type")))
}

/// Decodes a `join_tokens` row (timestamps as RFC 3339 text).
pub(crate) fn read_token<R>(row: &R) -> Result<JoinTokenRecord, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = col(row, "id")?;
    let id = JoinTokenId::parse(&id).map_err(|_| corrupt("join_tokens.id"))?;
    let hash: Vec<u8> = col(row, "secret_sha256")?;
    let node_name: Option<String> = col(row, "node_name")?;
    let role: String = col(row, "role")?;
    let used_by_node: Option<String> = col(row, "used_by_node")?;
    Ok(JoinTokenRecord {
        secret_sha256: hash
            .try_into()
            .map_err(|_| corrupt("join_tokens.secret_sha256"))?,
        node_name: node_name
            .map(|n| NodeName::parse(&n).map_err(|_| corrupt("join_tokens.node_name")))
            .transpose()?,
        provision_id: col(row, "provision_id")?,
        role: Role::from_name(&role).ok_or_else(|| corrupt("join_tokens.role"))?,
        created_at: parse_timestamp(&col::<_, String>(row, "created_at")?, "created_at")?,
        expires_at: parse_timestamp(&col::<_, String>(row, "expires_at")?, "expires_at")?,
        used_at: parse_optional(col(row, "used_at")?, "used_at")?,
        used_by_node: used_by_node
            .map(|n| NodeId::parse(&n).map_err(|_| corrupt("join_tokens.used_by_node")))
            .transpose()?,
        revoked_at: parse_optional(col(row, "revoked_at")?, "revoked_at")?,
        id,
    })
}

/// Decodes a `nodes` row (timestamps as RFC 3339 text).
pub(crate) fn read_node<R>(row: &R) -> Result<Node, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = col(row, "id")?;
    let name: String = col(row, "name")?;
    let kinds = string_list(
        &col::<_, String>(row, "workload_kinds")?,
        "nodes.workload_kinds",
    )?;
    Ok(Node {
        id: NodeId::parse(&id).map_err(|_| corrupt("nodes.id"))?,
        name: NodeName::parse(&name).map_err(|_| corrupt("nodes.name"))?,
        addresses: string_list(&col::<_, String>(row, "addresses")?, "nodes.addresses")?,
        agent_version: col(row, "agent_version")?,
        docker_version: col(row, "docker_version")?,
        workload_kinds: kinds
            .iter()
            .map(|k| WorkloadKind::from_name(k).ok_or_else(|| corrupt("nodes.workload_kinds")))
            .collect::<Result<_, _>>()?,
        provision_id: col(row, "provision_id")?,
        enrolled_at: parse_timestamp(&col::<_, String>(row, "enrolled_at")?, "enrolled_at")?,
        last_seen_at: parse_timestamp(&col::<_, String>(row, "last_seen_at")?, "last_seen_at")?,
        cert_serial: col(row, "cert_serial")?,
        cert_fingerprint: col(row, "cert_fingerprint")?,
    })
}

/// Decodes `install_progress` rows (step name, RFC 3339 time) into step order.
pub(crate) fn decode_progress(
    rows: Vec<(String, String, Option<String>)>,
) -> Result<Vec<InstallReport>, StoreError> {
    let mut steps = rows
        .into_iter()
        .map(|(step, at, error)| {
            let step = InstallStep::parse(&step).map_err(|_| corrupt("install_progress.step"))?;
            let reported_at = parse_timestamp(&at, "install_progress.reported_at")?;
            Ok(InstallReport {
                step,
                reported_at,
                error,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    steps.sort();
    Ok(steps)
}

/// The outcome of inserting a redemption's node: a unique-name violation is
/// `RedeemError::NameTaken` (the caller's transaction then rolls back, leaving the token
/// unused); another unique violation means the node id exists.
pub(crate) fn node_insert_outcome<T>(result: Result<T, sqlx::Error>) -> Result<(), RedeemError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_name_conflict(&e) => Err(RedeemError::NameTaken),
        Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate("nodes").into()),
        Err(e) => Err(e.into()),
    }
}

/// Whether an insert failed on the unique node name (rather than on anything else).
fn is_name_conflict(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| {
        d.is_unique_violation()
            && (d.constraint() == Some("nodes_name_key") || d.message().contains("nodes.name"))
    })
}

/// Whether an insert failed on a unique key.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

fn corrupt(column: &str) -> StoreError {
    StoreError::Corrupt(format!("{column} holds an invalid value"))
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn timestamps_are_stored_as_fixed_width_utc_micros() {
        let t = datetime!(2025-01-31 13:00:00.123456789 +01:00);
        let text = format_timestamp(t).expect("formats");
        assert_eq!(text, "2025-01-31T12:00:00.123456Z");
        assert_eq!(
            parse_timestamp(&text, "t").expect("parses"),
            datetime!(2025-01-31 12:00:00.123456 UTC)
        );
    }

    #[test]
    fn lists_are_encoded_as_json_arrays() {
        assert_eq!(
            addresses_json(&["10.0.0.1".into(), "a\"b".into()]),
            r#"["10.0.0.1","a\"b"]"#
        );
        assert_eq!(kinds_json(&[WorkloadKind::Apps]), r#"["apps"]"#);
        assert!(string_list("{}", "c").is_err());
    }
}
