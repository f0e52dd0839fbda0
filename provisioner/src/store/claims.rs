//! Node-name claims inside the node store's transactions (the table is described in
//! `provisions`). An enrollment takes over the claim of its own provision or claims the
//! name afresh; a claim held by anyone else fails the enrollment with `NameTaken`. Deleting
//! a node releases its claim.
use levelrail_db::{Dialect, Tx, args};

use crate::model::RedeemError;
use crate::model::{NodeId, NodeName};

/// Whether an insert failed on the `name_claims` primary key.
pub(crate) fn is_claim_conflict<D: Dialect>(e: &sqlx::Error) -> bool {
    D::unique_violation(e).is_some_and(|v| v.is("name_claims", &["name"]))
}

/// Gives `name` to the enrolling node `node` (see the module doc).
pub(crate) async fn claim_for_node<D: Dialect>(
    tx: &mut Tx<D>,
    name: &NodeName,
    node: &NodeId,
    provision_id: Option<&str>,
) -> Result<(), RedeemError> {
    if let Some(provision) = provision_id {
        let taken = tx
            .execute(
                "UPDATE name_claims SET holder_kind = 'node', holder_id = $1 \
                 WHERE name = $2 AND holder_kind = 'provision' AND holder_id = $3",
                &args![node.as_str(), name.as_str(), provision],
            )
            .await?;
        if taken > 0 {
            return Ok(());
        }
    }
    let inserted = tx
        .execute(
            "INSERT INTO name_claims (name, holder_kind, holder_id) VALUES ($1, 'node', $2)",
            &args![name.as_str(), node.as_str()],
        )
        .await;
    match inserted {
        Ok(_) => Ok(()),
        Err(e) if is_claim_conflict::<D>(&e) => Err(RedeemError::NameTaken),
        Err(e) => Err(e.into()),
    }
}
