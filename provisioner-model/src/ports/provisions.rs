//! The provisions' storage port, and every port in one database.
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::{AuditStore, ChangeFeed, NodeStore, OrphanStore, SharedStateStore, StoreError};
use crate::provision::{
    ClaimHolder, InsertProvisionError, PageCursor, ProvisionId, ProvisionRecord,
};
use crate::{InstallReport, JoinTokenRecord, NodeId, NodeName};

/// How many provisions [`ProvisionStore::get_provisions`] reads per query.
pub const PROVISIONS_PER_READ: usize = 32;

/// The provision half of the provisioner's storage.
#[async_trait]
pub trait ProvisionStore: Send + Sync + Debug {
    /// Inserts a new provision and claims its name, atomically. `NameTaken` when the name
    /// is claimed; `Replayed(existing)` when its request id was used before. Returns the
    /// record as stored: where leases are compared at the database's clock
    /// ([`Self::database_time`]), a lease `record` holds runs from the database's time of
    /// the insert, for as long as it asks (`lease_until − updated_at`), so the inserting
    /// process holds it with no second write.
    async fn insert_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<ProvisionRecord, InsertProvisionError> {
        self.insert_provision_with_token(record, None).await
    }
    /// [`Self::insert_provision`], storing the provision's join token (already named in
    /// `record`) in the same transaction: neither is stored without the other.
    async fn insert_provision_with_token(
        &self,
        record: &ProvisionRecord,
        token: Option<&JoinTokenRecord>,
    ) -> Result<ProvisionRecord, InsertProvisionError>;
    /// A provision by id.
    async fn get_provision(&self, id: &ProvisionId) -> Result<Option<ProvisionRecord>, StoreError>;
    /// The provisions of `ids` that exist, in any order (an id asked twice may be
    /// returned once or twice): one query per [`PROVISIONS_PER_READ`] ids (a replica's
    /// watchers of provisions other replicas drive are refreshed this way, in one batch).
    async fn get_provisions(&self, ids: &[ProvisionId])
    -> Result<Vec<ProvisionRecord>, StoreError>;
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
    /// Writes the mutable fields of `record` if the stored generation and lease epoch are
    /// still `record.generation` and `record.lease_epoch`, and returns what was stored
    /// (generation + 1). `None` when either is stale (the row changed, or its lease changed
    /// hands, since it was read) or the row is gone. A `failed` status releases the name
    /// claim.
    async fn update_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<Option<ProvisionRecord>, StoreError>;
    /// Takes or renews the lease of a provision that is not terminal, for `owner` until
    /// `until`, if the lease is free, expired at `now` or already `owner`'s, and returns the
    /// lease's epoch: bumped when the lease changes hands (free or expired), kept by a
    /// renewal of a live lease. Does not bump the generation. `None` when another owner
    /// holds it or the provision is terminal.
    async fn acquire_lease(
        &self,
        id: &ProvisionId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Option<u64>, StoreError>;
    /// Renews, in one write, the live leases `owner` holds (unexpired at `now`) on those of
    /// `ids` that are not terminal, until `until`, keeping their epochs; returns each
    /// renewed provision with its epoch. A provision missing from the answer is no longer
    /// `owner`'s (or its lease lapsed): its driver stops.
    async fn renew_leases(
        &self,
        owner: &str,
        ids: &[ProvisionId],
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<(ProvisionId, u64)>, StoreError>;
    /// Gives the lease up, if `owner` holds it (bumping the epoch).
    async fn release_lease(&self, id: &ProvisionId, owner: &str) -> Result<(), StoreError>;
    /// The database's clock, where several replicas share the database: leases are taken
    /// and compared at it, so no replica's clock decides another's lease. `None` when the
    /// store is this process's alone (SQLite, the test double): its own clock decides.
    async fn database_time(&self) -> Result<Option<OffsetDateTime>, StoreError>;
    /// This replica's feed of the changes committed by any replica, where several share
    /// the database; `None` when the store is this process's alone (it hears its own
    /// changes in-process).
    async fn change_feed(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreError>;
    /// Provisions that are not terminal and whose lease is free or expired at `now`.
    async fn list_resumable(&self, now: OffsetDateTime) -> Result<Vec<ProvisionId>, StoreError>;
    /// Who holds `name`.
    async fn name_claim(&self, name: &NodeName) -> Result<Option<ClaimHolder>, StoreError>;
    /// What a waiting driver reads, in one round trip: the provision, its install-progress
    /// reports and the node its join token enrolled.
    async fn wait_view(&self, id: &ProvisionId) -> Result<Option<WaitView>, StoreError>;
    /// This store for background work (the drivers, lease renewals, the sweeper): on its
    /// own connections where the database has them (PostgreSQL), behind the API's requests
    /// at a single writer (a SQLite file). `None` where both are served alike.
    fn background(&self) -> Option<Arc<dyn ProvisionStore>> {
        None
    }
}

/// A provision as a waiting driver reads it (see [`ProvisionStore::wait_view`]).
#[derive(Debug, Clone)]
pub struct WaitView {
    pub record: ProvisionRecord,
    /// Its install-progress reports, in step order.
    pub progress: Vec<InstallReport>,
    /// The node its join token enrolled, once one did (and while it exists).
    pub enrolled_node: Option<NodeId>,
}

/// Every part of the provisioner's storage in one database.
pub trait ProvisionerStore:
    NodeStore + ProvisionStore + OrphanStore + SharedStateStore + AuditStore
{
}

impl<T: NodeStore + ProvisionStore + OrphanStore + SharedStateStore + AuditStore> ProvisionerStore
    for T
{
}
