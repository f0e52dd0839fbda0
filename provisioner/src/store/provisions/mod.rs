//! Persistence of provisions and of node-name claims.
//!
//! One port (`model::ports::ProvisionStore`) implemented in SQL by the same [`super::SqlStore`]
//! as the node store, sharing its database so one transaction can cover a provision and its
//! name claim, and one conformance suite (`conformance::run`).
//!
//! Invariants the store keeps:
//! - a name is claimed by at most one holder (`name_claims` primary key): an enrolled node
//!   or a provision that has not failed. Inserting a provision claims its name in the same
//!   transaction; a write making it `failed` releases the claim; enrolling the provision's
//!   node takes the claim over; deleting a node releases its claim;
//! - every update is conditional on the row's `generation` and bumps it;
//! - a terminal provision keeps no sealed token and no lease;
//! - a lease has one owner: it is taken only when free, expired or already held.
use std::sync::Arc;

use crate::model::ports::StoreError;
use crate::model::ports::{ProvisionStore, ProvisionerStore};
use crate::model::provision::{InsertProvisionError, ProvisionRecord};

mod codec;
pub mod conformance;
#[cfg(test)]
mod memory;
mod sql;
#[cfg(test)]
mod tests;

/// After an insert hit a unique key: the provision its request id names (a replay), or
/// `NameTaken`.
async fn replayed_or_taken(
    store: &dyn ProvisionStore,
    record: &ProvisionRecord,
) -> InsertProvisionError {
    let Some(request) = &record.request_id else {
        return InsertProvisionError::NameTaken;
    };
    match store.get_provision_by_request(request).await {
        Ok(Some(existing)) => InsertProvisionError::Replayed(Box::new(existing)),
        Ok(None) => InsertProvisionError::NameTaken,
        Err(e) => InsertProvisionError::Store(e),
    }
}

/// Opens the store a DSN names (as [`super::open`]) with every part: hand the same `Arc`
/// to `Nodes` (as `Arc<dyn NodeStore>`) and to the provisioner (as
/// `Arc<dyn ProvisionStore>`), so name claims and enrollments share transactions.
pub async fn open_provisioner_store(dsn: &str) -> Result<Arc<dyn ProvisionerStore>, StoreError> {
    Ok(
        match levelrail_db::open(dsn, &super::sql::MIGRATIONS).await? {
            levelrail_db::Opened::Sqlite(db) => Arc::new(super::SqlStore::new(db)),
            levelrail_db::Opened::Postgres(db) => Arc::new(super::SqlStore::new(db)),
        },
    )
}
