//! What differs between the backends, and nothing else: binding and decoding, the
//! statement that opens a write transaction, migrations, and the shape of a unique
//! violation.
use std::fmt::Debug;

use futures::future::BoxFuture;
use sqlx::migrate::MigrateError;
use sqlx::{Database, Pool};

use crate::{Db, Migrations, Row, Value};

/// The connection type of a dialect's database.
pub(crate) type Conn<D> = <<D as Dialect>::Db as Database>::Connection;

/// A SQL backend. Implemented by [`crate::Sqlite`] and [`crate::Postgres`]; stores use
/// [`crate::Db`], which calls these.
pub trait Dialect: Debug + Send + Sync + Sized + 'static {
    type Db: Database;

    /// `sqlite` or `postgres`, for test names and messages.
    const NAME: &'static str;

    /// A query whose one row's `now` column is the database's clock; `None` when the
    /// database's clock is this process's (SQLite, embedded in one process).
    const NOW: Option<&'static str>;

    /// The statement that opens a transaction that will write. SQLite takes the write
    /// lock at once (`BEGIN IMMEDIATE`), so a transaction that reads then writes cannot
    /// fail on a lock upgrade; PostgreSQL's row locks make a plain `BEGIN` enough.
    const BEGIN_WRITE: &'static str;

    /// Connects to the database named by `dsn` and applies pending migrations.
    fn connect<'a>(
        dsn: &'a str,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<Db<Self>, sqlx::Error>>;

    /// Runs a statement; the number of rows it changed.
    fn execute<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'static str,
        args: &'c [Value],
    ) -> BoxFuture<'c, Result<u64, sqlx::Error>>;

    /// Runs a query; every row it returned.
    fn fetch_all<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'static str,
        args: &'c [Value],
    ) -> BoxFuture<'c, Result<Vec<Row>, sqlx::Error>>;

    /// Opens a `LISTEN` connection of its own on `channel`; `None` when no other process
    /// shares the database (SQLite).
    fn listen<'a>(
        pool: &'a Pool<Self::Db>,
        channel: &'a str,
    ) -> BoxFuture<'a, Result<Option<crate::Listener>, sqlx::Error>>;

    /// Applies pending migrations.
    fn migrate<'a>(
        conn: &'a mut Conn<Self>,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<(), MigrateError>>;

    /// The table and columns of the unique key an error violated, if it is a violation.
    fn unique_violation(e: &sqlx::Error) -> Option<UniqueViolation>;
}

/// The unique key (or primary key) a write violated: names only, never the values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueViolation {
    pub table: String,
    pub columns: Vec<String>,
}

impl UniqueViolation {
    /// Whether the violated key is exactly `columns` of `table`.
    pub fn is(&self, table: &str, columns: &[&str]) -> bool {
        self.table == table
            && self
                .columns
                .iter()
                .map(String::as_str)
                .eq(columns.iter().copied())
    }
}
