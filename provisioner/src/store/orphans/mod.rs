//! Persistence of orphaned servers.
//!
//! One trait ([`OrphanStore`]) implemented in SQL by the same [`super::SqlStore`] as the
//! node store (every write is one statement: an upsert on the server key, or a conditional
//! `UPDATE … RETURNING`, so replicas that find the same server, or retry the same orphan,
//! agree on one row), and one conformance suite (`conformance::run`).
//!
//! Invariants the store keeps:
//! - one row per server: `(provider, server key)` is unique, the key being the server id or,
//!   without one, the provision id; recording a known server again returns its row (moved
//!   back to `pending` when it was `deleted`, since the server showed up again);
//! - `adopted` and `deleted` are left only by a new sighting (`deleted` → `pending`);
//! - an attempt is counted only while the orphan is in the state its caller saw.
use std::fmt::Debug;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::domain::{Orphan, OrphanId, OrphanState};

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

pub mod conformance;
#[cfg(test)]
mod memory;
mod sql;
