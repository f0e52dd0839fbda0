//! Opening a database by DSN.
use sqlx::migrate::Migrator;

use crate::{Db, Postgres, Sqlite};

/// A service's migrations, one set per dialect, and the table that records them.
#[derive(Debug, Clone, Copy)]
pub struct Migrations {
    /// Not sqlx's default name where a service may share a database with another.
    pub table: &'static str,
    pub sqlite: fn() -> Migrator,
    pub postgres: fn() -> Migrator,
}

/// An open, migrated database.
#[derive(Debug, Clone)]
pub enum Opened {
    Sqlite(Db<Sqlite>),
    Postgres(Db<Postgres>),
}

/// Failures to open a database. Never contains the DSN.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL: want memory, sqlite://PATH or postgres://…")]
    UnsupportedUrl,
    #[error("database unavailable")]
    Unavailable(#[from] sqlx::Error),
}

/// Opens and migrates the database a DSN names: `sqlite://PATH` or `sqlite:PATH` (the file
/// is created, mode 0600, if missing), `memory` (a private in-memory SQLite database, for
/// tests and throw-away demos), or `postgres://…` / `postgresql://…`.
pub async fn open(dsn: &str, migrations: &Migrations) -> Result<Opened, DbError> {
    if dsn == "memory" {
        Ok(Opened::Sqlite(
            Db::<Sqlite>::connect("sqlite::memory:", migrations).await?,
        ))
    } else if dsn.starts_with("sqlite:") {
        Ok(Opened::Sqlite(
            Db::<Sqlite>::connect(dsn, migrations).await?,
        ))
    } else if dsn.starts_with("postgres://") || dsn.starts_with("postgresql://") {
        Ok(Opened::Postgres(
            Db::<Postgres>::connect(dsn, migrations).await?,
        ))
    } else {
        Err(DbError::UnsupportedUrl)
    }
}
