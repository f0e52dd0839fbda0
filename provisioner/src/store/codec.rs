//! Column encodings of the node tables: JSON lists, and the decoding of rows into records.
//! Anything unexpected in a row becomes `StoreError::Corrupt`, naming the column but never
//! echoing its value.
use levelrail_db::{Dialect, Row};

use crate::model::ports::StoreError;
use crate::model::provision::{SagaLog, current};
use crate::model::{
    InstallReport, InstallStep, JoinTokenId, Node, NodeId, NodeName, NodeServer, Role, WorkloadKind,
};
use crate::model::{JoinTokenRecord, RedeemError};
use levelrail_types::ProviderId;

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

/// Decodes a `join_tokens` row.
pub(crate) fn read_token(row: &Row) -> Result<JoinTokenRecord, StoreError> {
    let id = row.text("id")?;
    let hash = row.bytes("secret_sha256")?;
    let role = row.text("role")?;
    Ok(JoinTokenRecord {
        id: JoinTokenId::parse(&id).map_err(|_| corrupt("join_tokens.id"))?,
        secret_sha256: hash
            .try_into()
            .map_err(|_| corrupt("join_tokens.secret_sha256"))?,
        node_name: row
            .opt_text("node_name")?
            .map(|n| NodeName::parse(&n).map_err(|_| corrupt("join_tokens.node_name")))
            .transpose()?,
        provision_id: row.opt_text("provision_id")?,
        role: Role::from_name(&role).ok_or_else(|| corrupt("join_tokens.role"))?,
        created_at: row.time("created_at")?,
        expires_at: row.time("expires_at")?,
        used_at: row.opt_time("used_at")?,
        used_by_node: row
            .opt_text("used_by_node")?
            .map(|n| NodeId::parse(&n).map_err(|_| corrupt("join_tokens.used_by_node")))
            .transpose()?,
        revoked_at: row.opt_time("revoked_at")?,
    })
}

/// Decodes a `nodes` row.
pub(crate) fn read_node(row: &Row) -> Result<Node, StoreError> {
    let kinds = string_list(&row.text("workload_kinds")?, "nodes.workload_kinds")?;
    Ok(Node {
        id: NodeId::parse(&row.text("id")?).map_err(|_| corrupt("nodes.id"))?,
        name: NodeName::parse(&row.text("name")?).map_err(|_| corrupt("nodes.name"))?,
        addresses: string_list(&row.text("addresses")?, "nodes.addresses")?,
        agent_version: row.text("agent_version")?,
        docker_version: Some(row.text("docker_version")?).filter(|v| !v.is_empty()),
        workload_kinds: kinds
            .iter()
            .map(|k| WorkloadKind::from_name(k).ok_or_else(|| corrupt("nodes.workload_kinds")))
            .collect::<Result<_, _>>()?,
        provision_id: row.opt_text("provision_id")?,
        enrolled_at: row.time("enrolled_at")?,
        last_seen_at: row.time("last_seen_at")?,
        cert_serial: row.text("cert_serial")?,
        cert_fingerprint: row.text("cert_fingerprint")?,
        // NULL from a replica of an earlier release (it issued 365-day certificates).
        cert_expires_at: match row.opt_time("cert_expires_at")? {
            Some(t) => t,
            None => row.time("enrolled_at")? + time::Duration::days(365),
        },
        server: read_node_server(row)?,
    })
}

/// The server a node's provision created (the joined `server_*` columns); `None` for a
/// node enrolled by hand.
fn read_node_server(row: &Row) -> Result<Option<NodeServer>, StoreError> {
    let Some(provider) = row.opt_text("server_provider")? else {
        return Ok(None);
    };
    // Where it runs: the choice in use, after any capacity fallback (the row's region and
    // size are the first choice).
    let saga: SagaLog =
        serde_json::from_str(&row.text("server_saga")?).map_err(|_| corrupt("provisions.saga"))?;
    let (region, size) = match current(&saga.placements) {
        Some(p) => (p.region.clone(), p.size.clone()),
        None => (row.text("server_region")?, row.text("server_size")?),
    };
    Ok(Some(NodeServer {
        provider: provider
            .parse::<ProviderId>()
            .map_err(|_| corrupt("provisions.provider"))?,
        region,
        size,
        server_id: row.opt_text("server_id")?,
    }))
}

/// Decodes `install_progress` rows into step order.
pub(crate) fn read_progress<'a>(
    rows: impl IntoIterator<Item = &'a Row>,
) -> Result<Vec<InstallReport>, StoreError> {
    let mut steps = rows
        .into_iter()
        .map(|row| {
            let step = InstallStep::parse(&row.text("step")?)
                .map_err(|_| corrupt("install_progress.step"))?;
            Ok(InstallReport {
                step,
                reported_at: row.time("reported_at")?,
                error: row.opt_text("error")?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    steps.sort();
    Ok(steps)
}

/// The outcome of inserting a redemption's node: a unique-name violation is
/// `RedeemError::NameTaken` (the caller's transaction then rolls back, leaving the token
/// unused); another unique violation means the node id exists.
pub(crate) fn node_insert_outcome<D: Dialect>(
    result: Result<u64, sqlx::Error>,
) -> Result<(), RedeemError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) => match D::unique_violation(&e) {
            Some(v) if v.is("nodes", &["name"]) => Err(RedeemError::NameTaken),
            Some(_) => Err(StoreError::Duplicate("nodes").into()),
            None => Err(e.into()),
        },
    }
}

pub(crate) fn corrupt(column: &str) -> StoreError {
    StoreError::Corrupt(format!("{column} holds an invalid value"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
