//! The orphan inventory's storage port.
use std::fmt::Debug;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{Orphan, OrphanId, OrphanState};

/// The orphan half of the provisioner's storage.
#[async_trait]
pub trait OrphanStore: Send + Sync + Debug {
    /// Records `orphan`, or, when its server is already recorded, returns that row
    /// (back to `pending` if it was `deleted`). `first_seen`, `attempts` and the id of an
    /// existing row are kept.
    async fn record_orphan(&self, orphan: &Orphan) -> Result<Orphan, StoreError>;
    /// An orphan by id.
    async fn get_orphan(&self, id: &OrphanId) -> Result<Option<Orphan>, StoreError>;
    /// Every orphan, oldest first (by `first_seen`, then id).
    async fn list_orphans(&self) -> Result<Vec<Orphan>, StoreError>;
    /// Counts a deletion attempt of an orphan that is still in state `seen`: with no
    /// `error` it becomes `deleted`, otherwise `error` becomes its last error. `None` when
    /// the orphan is gone or has left `seen`.
    async fn record_orphan_attempt(
        &self,
        id: &OrphanId,
        seen: OrphanState,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<Option<Orphan>, StoreError>;
    /// Moves a `pending` orphan to `adopted`. `None` when it is gone or not pending.
    async fn adopt_orphan(
        &self,
        id: &OrphanId,
        now: OffsetDateTime,
    ) -> Result<Option<Orphan>, StoreError>;
}
