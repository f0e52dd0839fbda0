//! Persistence of provisions and of node-name claims.
//!
//! One trait ([`ProvisionStore`]) implemented in SQL by the same [`super::SqlStore`] as the
//! node store, sharing its database so one transaction can cover a provision and its name
//! claim, and one conformance suite (`conformance::run`).
//!
//! Invariants the store keeps:
//! - a name is claimed by at most one holder (`name_claims` primary key): an enrolled node
//!   or a provision that has not failed. Inserting a provision claims its name in the same
//!   transaction; a write making it `failed` releases the claim; enrolling the provision's
//!   node takes the claim over; deleting a node releases its claim;
//! - every update is conditional on the row's `generation` and bumps it;
//! - a terminal provision keeps no sealed token and no lease;
//! - a lease has one owner: it is taken only when free, expired or already held.
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::{NodeStore, OrphanStore, StoreError};
use crate::domain::NodeName;
use crate::domain::provision::ProvisionId;

mod codec;
pub mod conformance;
#[cfg(test)]
mod memory;
mod record;
mod sql;
#[cfg(test)]
mod tests;

pub use record::{ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord};

/// The provision half of the provisioner's storage.
#[async_trait]
pub trait ProvisionStore: Send + Sync + Debug {
    /// Inserts a new provision and claims its name, atomically. `NameTaken` when the name
    /// is claimed; `Replayed(existing)` when its request id was used before.
    async fn insert_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<ProvisionRecord, InsertProvisionError>;
    /// A provision by id.
    async fn get_provision(&self, id: &ProvisionId) -> Result<Option<ProvisionRecord>, StoreError>;
    /// The provision created with `request_id`.
    async fn get_provision_by_request(
        &self,
        request_id: &str,
    ) -> Result<Option<ProvisionRecord>, StoreError>;
    /// Up to `limit` provisions, newest first (by creation time, then id), after `after`.
    async fn list_provisions(
        &self,
        limit: u32,
        after: Option<&PageCursor>,
    ) -> Result<Vec<ProvisionRecord>, StoreError>;
    /// Writes the mutable fields of `record` if the stored generation is still
    /// `record.generation`, and returns what was stored (generation + 1). `None` when the
    /// generation is stale or the row is gone. A `failed` status releases the name claim.
    async fn update_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<Option<ProvisionRecord>, StoreError>;
    /// Takes or renews the lease of a provision that is not terminal, for `owner` until
    /// `until`, if the lease is free, expired at `now` or already `owner`'s. Does not bump
    /// the generation. `false` when another owner holds it or the provision is terminal.
    async fn acquire_lease(
        &self,
        id: &ProvisionId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Gives the lease up, if `owner` holds it.
    async fn release_lease(&self, id: &ProvisionId, owner: &str) -> Result<(), StoreError>;
    /// Provisions that are not terminal and whose lease is free or expired at `now`.
    async fn list_resumable(&self, now: OffsetDateTime) -> Result<Vec<ProvisionId>, StoreError>;
    /// Who holds `name`.
    async fn name_claim(&self, name: &NodeName) -> Result<Option<ClaimHolder>, StoreError>;
}

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

/// Every part of the provisioner's storage in one database.
pub trait ProvisionerStore: NodeStore + ProvisionStore + OrphanStore {}

impl<T: NodeStore + ProvisionStore + OrphanStore> ProvisionerStore for T {}

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
