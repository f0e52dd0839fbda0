//! Persistence of join tokens (hashes only), enrolled nodes and install progress, (in
//! `provisions`) of provisions and node-name claims, and (in `orphans`) of orphaned servers.
//!
//! One port per table group (the traits in `model::ports`), implemented once in SQL by
//! [`SqlStore`] over either dialect (SQLite or PostgreSQL, see `levelrail-db`), and one
//! conformance suite per trait that both dialects must pass. The store never sees a token
//! secret: only its SHA-256, compared in constant time. Redemption is atomic in every backend:
//! exactly one of any number of concurrent redemptions of a token wins.
use std::sync::Arc;

use crate::model::ports::{NodeStore, StoreError};

mod audit;
pub(crate) mod batch;
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
mod sql;

#[cfg(test)]
pub(crate) use memory::MemoryStore;
pub use provisions::open_provisioner_store;
pub use sql::{PostgresStore, SqlStore, SqliteStore};

/// Opens the store a DSN names: `sqlite://PATH` or `sqlite:PATH` (the file is created, mode
/// 0600, if missing), `memory` (a private in-memory SQLite database), or `postgres://…` /
/// `postgresql://…`. Migrations are applied before it returns. Neither errors nor logs ever
/// contain the DSN, which may hold a database password.
pub async fn open(dsn: &str) -> Result<Arc<dyn NodeStore>, StoreError> {
    let store: Arc<dyn NodeStore> = open_provisioner_store(dsn).await?;
    Ok(store)
}

#[cfg(test)]
mod tests;
