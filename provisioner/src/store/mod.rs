//! Persistence of join tokens (hashes only), enrolled nodes and install progress, (in
//! `provisions`) of provisions and node-name claims, and (in `orphans`) of orphaned servers.
//!
//! One trait per table group, implemented once in SQL by [`SqlStore`] over either dialect
//! (SQLite or PostgreSQL, see `levelrail-db`), and one conformance suite per trait that
//! both dialects must pass. The store never sees a token secret:
//! only its SHA-256, compared in constant time. Redemption is atomic in every backend:
//! exactly one of any number of concurrent redemptions of a token wins.
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::domain::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, Node, NodeId, NodeName,
};

mod claims;
mod codec;
pub mod conformance;
#[cfg(test)]
pub(crate) mod isolated;
#[cfg(test)]
pub(crate) mod memory;
mod nodes;
pub mod orphans;
pub mod provisions;
mod records;
mod sql;

#[cfg(test)]
pub(crate) use memory::MemoryStore;
pub use orphans::OrphanStore;
pub use provisions::{
    ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord, ProvisionStore,
    ProvisionerStore, open_provisioner_store,
};
pub use records::{JoinTokenRecord, NewNode, RedeemError};
pub use sql::{PostgresStore, SqlStore, SqliteStore};

/// Opens the store a DSN names: `sqlite://PATH` or `sqlite:PATH` (the file is created, mode
/// 0600, if missing), `memory` (a private in-memory SQLite database), or `postgres://…` /
/// `postgresql://…`. Migrations are applied before it returns. Neither errors nor logs ever contain the DSN, which may hold
/// a database password.
pub async fn open(dsn: &str) -> Result<Arc<dyn NodeStore>, StoreError> {
    let store: Arc<dyn NodeStore> = open_provisioner_store(dsn).await?;
    Ok(store)
}

/// Storage failures a caller acts on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or answered with an error.
    #[error("node store unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// A row with this key already exists (names the table, never a value).
    #[error("a {0} row with this key already exists")]
    Duplicate(&'static str),
    /// Stored data could not be interpreted.
    #[error("node store holds an unreadable row: {0}")]
    Corrupt(String),
    /// The DSN names no supported database (the DSN is not repeated).
    #[error("unsupported database URL: want memory, sqlite://PATH or postgres://…")]
    UnsupportedUrl,
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Unavailable(e)
    }
}

impl From<levelrail_db::ColumnError> for StoreError {
    fn from(e: levelrail_db::ColumnError) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

impl From<levelrail_db::DbError> for StoreError {
    fn from(e: levelrail_db::DbError) -> Self {
        match e {
            levelrail_db::DbError::UnsupportedUrl => StoreError::UnsupportedUrl,
            levelrail_db::DbError::Unavailable(e) => StoreError::Unavailable(e),
        }
    }
}

/// The provisioner's node registry storage.
#[async_trait]
pub trait NodeStore: Send + Sync + Debug {
    /// Stores a new join token. `StoreError::Duplicate` if its id exists.
    async fn create_join_token(&self, token: &JoinTokenRecord) -> Result<(), StoreError>;
    /// A join token by id.
    async fn get_join_token(&self, id: &JoinTokenId)
    -> Result<Option<JoinTokenRecord>, StoreError>;
    /// Every join token, ordered by id.
    async fn list_join_tokens(&self) -> Result<Vec<JoinTokenRecord>, StoreError>;
    /// Revokes an unused token (revoking a revoked one again keeps its first `revoked_at`).
    /// `false` when the token is unknown or already used.
    async fn revoke_join_token(
        &self,
        id: &JoinTokenId,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Revokes every unused, unrevoked token bound to a provision; returns how many.
    async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
        now: OffsetDateTime,
    ) -> Result<u64, StoreError>;
    /// Atomically redeems a token and creates the node it enrolls, in one transaction:
    /// the token must exist with this secret hash (compared in constant time), be unused,
    /// unrevoked, unexpired at `now` and either unbound or bound to `node_name`. The node
    /// gets `enrolled_at = last_seen_at = now`. A taken node name fails the whole
    /// transaction with `RedeemError::NameTaken` and leaves the token unused.
    async fn redeem_join_token(
        &self,
        id: &JoinTokenId,
        secret_sha256: &[u8; 32],
        node_name: &NodeName,
        now: OffsetDateTime,
        new_node: &NewNode,
    ) -> Result<Node, RedeemError>;
    /// A node by id.
    async fn get_node(&self, id: &NodeId) -> Result<Option<Node>, StoreError>;
    /// The client certificate (PEM) issued to a node, when it exists and one was kept.
    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError>;
    /// Every node, ordered by name.
    async fn list_nodes(&self) -> Result<Vec<Node>, StoreError>;
    /// Deletes a node; `true` when it existed.
    async fn delete_node(&self, id: &NodeId) -> Result<bool, StoreError>;
    /// Records a heartbeat: last-seen time, and the report's addresses, agent and Docker
    /// versions. `false` when the node does not exist.
    async fn touch_node(
        &self,
        id: &NodeId,
        now: OffsetDateTime,
        report: &HeartbeatReport,
    ) -> Result<bool, StoreError>;
    /// Records that a provision reached an install step, or (with `error`) that the step
    /// failed. Idempotent: a repeated report keeps the first one.
    async fn record_install_progress(
        &self,
        provision_id: &str,
        step: InstallStep,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
    /// The install steps a provision reported, in step order.
    async fn list_install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, StoreError>;
}

#[cfg(test)]
mod tests;
