//! Persistence of encrypted credentials and API token hashes.
//!
//! One port (`model::ports::CredentialStore`), implemented once in SQL ([`SqlStore`], over
//! SQLite or PostgreSQL, see `levelrail-db`), and one conformance suite (`conformance::run`)
//! both must pass. The store never sees plaintext secrets: it holds envelopes (see
//! `crate::crypto`) and non-secret metadata.
use std::sync::Arc;

use crate::model::ports::{CredentialStore, StoreError};

mod codec;
pub mod conformance;
mod sql;

pub use sql::{PostgresStore, SqlStore, SqliteStore};

/// Opens the store a DSN names: `sqlite://PATH` or `sqlite:PATH` (the file is created, mode
/// 0600, if missing), `memory` (a private in-memory SQLite database), or `postgres://…` /
/// `postgresql://…`. Migrations are applied before it returns. Neither errors nor logs ever
/// contain the DSN, which may hold a database password.
pub async fn open(dsn: &str) -> Result<Arc<dyn CredentialStore>, StoreError> {
    Ok(match levelrail_db::open(dsn, &sql::MIGRATIONS).await? {
        levelrail_db::Opened::Sqlite(db) => Arc::new(SqlStore::new(db)),
        levelrail_db::Opened::Postgres(db) => Arc::new(SqlStore::new(db)),
    })
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        levelrail_db::DbError::from(e).into()
    }
}

impl From<levelrail_db::ColumnError> for StoreError {
    fn from(e: levelrail_db::ColumnError) -> Self {
        levelrail_db::DbError::from(e).into()
    }
}

impl From<levelrail_db::DbError> for StoreError {
    fn from(e: levelrail_db::DbError) -> Self {
        match e {
            levelrail_db::DbError::UnsupportedUrl => StoreError::UnsupportedUrl,
            levelrail_db::DbError::Unavailable(e) => StoreError::Unavailable(Box::new(e)),
            levelrail_db::DbError::Corrupt(why) => StoreError::Corrupt(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn open_memory_gives_an_empty_store() {
        let store = open("memory").await.expect("memory store opens");
        assert!(store.list_credentials().await.expect("list").is_empty());
    }

    #[tokio::test]
    async fn open_sqlite_creates_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("c.db");

        let store = open(&format!("sqlite:{}", path.display()))
            .await
            .expect("opens");

        assert_eq!(store.count_api_tokens().await.expect("count"), 0);
        assert!(path.exists(), "sqlite file was not created");
    }
}
