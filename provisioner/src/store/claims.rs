//! Node-name claims inside the node store's transactions (the table is described in
//! `provisions`). An enrollment takes over the claim of its own provision or claims the
//! name afresh; a claim held by anyone else fails the enrollment with `NameTaken`. Deleting
//! a node releases its claim.
use super::RedeemError;
use crate::domain::{NodeId, NodeName};

/// Whether an insert failed on the `name_claims` primary key.
pub(crate) fn is_claim_conflict(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| {
        d.is_unique_violation()
            && (d.constraint() == Some("name_claims_pkey")
                || d.message().contains("name_claims.name"))
    })
}

fn claim_outcome<T>(result: Result<T, sqlx::Error>) -> Result<(), RedeemError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_claim_conflict(&e) => Err(RedeemError::NameTaken),
        Err(e) => Err(e.into()),
    }
}

/// SQLite: gives `name` to the enrolling node `node` (see the module doc).
pub(crate) async fn claim_for_node_sqlite(
    conn: &mut sqlx::SqliteConnection,
    name: &NodeName,
    node: &NodeId,
    provision_id: Option<&str>,
) -> Result<(), RedeemError> {
    if let Some(provision) = provision_id {
        let taken = sqlx::query(
            "UPDATE name_claims SET holder_kind = 'node', holder_id = ?1 \
             WHERE name = ?2 AND holder_kind = 'provision' AND holder_id = ?3",
        )
        .bind(node.as_str())
        .bind(name.as_str())
        .bind(provision)
        .execute(&mut *conn)
        .await?;
        if taken.rows_affected() > 0 {
            return Ok(());
        }
    }
    let inserted = sqlx::query(
        "INSERT INTO name_claims (name, holder_kind, holder_id) VALUES (?1, 'node', ?2)",
    )
    .bind(name.as_str())
    .bind(node.as_str())
    .execute(&mut *conn)
    .await;
    claim_outcome(inserted)
}

/// PostgreSQL: gives `name` to the enrolling node `node` (see the module doc).
pub(crate) async fn claim_for_node_postgres(
    conn: &mut sqlx::PgConnection,
    name: &NodeName,
    node: &NodeId,
    provision_id: Option<&str>,
) -> Result<(), RedeemError> {
    if let Some(provision) = provision_id {
        let taken = sqlx::query(
            "UPDATE name_claims SET holder_kind = 'node', holder_id = $1 \
             WHERE name = $2 AND holder_kind = 'provision' AND holder_id = $3",
        )
        .bind(node.as_str())
        .bind(name.as_str())
        .bind(provision)
        .execute(&mut *conn)
        .await?;
        if taken.rows_affected() > 0 {
            return Ok(());
        }
    }
    let inserted = sqlx::query(
        "INSERT INTO name_claims (name, holder_kind, holder_id) VALUES ($1, 'node', $2)",
    )
    .bind(name.as_str())
    .bind(node.as_str())
    .execute(&mut *conn)
    .await;
    claim_outcome(inserted)
}
