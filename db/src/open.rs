//! Opening a database by DSN.
use sqlx::migrate::Migrator;

use crate::{ColumnError, Db, Postgres, Sqlite};

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

/// A database failure as the stores report it. Never contains the DSN or a value.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL: want memory, sqlite://PATH or postgres://…")]
    UnsupportedUrl,
    /// The database could not be reached or answered with an error: worth a retry.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// A value the backend cannot hold (a timestamp outside years 1-9999), or a stored one
    /// that cannot be read: retrying cannot help. Names the problem, never the value.
    #[error("{0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::Encode(why) => DbError::Corrupt(why.to_string()),
            other => DbError::Unavailable(other),
        }
    }
}

impl From<ColumnError> for DbError {
    fn from(e: ColumnError) -> Self {
        DbError::Corrupt(e.to_string())
    }
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
