//! Database plumbing the services share, so each store is written once.
//!
//! A store is generic over a [`Dialect`] ([`Sqlite`], the embedded default, or [`Postgres`],
//! for several replicas). Its SQL uses `$1…` placeholders, which sqlx accepts on both, binds
//! [`Value`]s and reads [`Row`]s; the dialect does what truly differs: binding and decoding
//! (timestamps are fixed-width UTC text in SQLite and `TIMESTAMPTZ` in PostgreSQL), the
//! statement that opens a write transaction, and the shape of a unique violation.
//! [`open`] connects by DSN and migrates; SQLite files are created mode 0600, and
//! PostgreSQL tests get throw-away schemas. Neither errors nor logs ever contain a DSN,
//! which may hold a database password.
mod announce;
mod db;
mod dialect;
mod gate;
mod group;
mod listen;
mod open;
mod postgres;
mod row;
mod sqlite;
mod time_text;
mod value;

#[cfg(test)]
mod tests;

pub use db::{Db, Held, Tx};
pub use dialect::{Dialect, UniqueViolation};
pub use gate::Class;
pub use listen::{Listener, Notice};
pub use open::{DbError, Migrations, Opened, open};
pub use postgres::Postgres;
pub use row::{ColumnError, Row};
pub use sqlite::Sqlite;
pub use time_text::{format_timestamp, to_stored_precision};
pub use value::{Array, Value};

/// The arguments of a statement, in placeholder order: `args![id, name, now]`.
#[macro_export]
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        [$($crate::Value::from($value)),*]
    };
}
