//! The provisioner's storage in one SQL database: [`SqlStore`] implements the node, the
//! provision and the orphan store once, over either dialect, so one transaction can cover
//! a provision and its name claim.
use std::sync::Arc;

use levelrail_db::{Db, Dialect, Migrations, Postgres, Sqlite};

use crate::store::batch::InsertBatcher;

use crate::model::ports::StoreError;

/// The provisioner's tables (migrations in `migrations/{sqlite,postgres}`). The bookkeeping
/// table is not sqlx's default, so the provisioner can share a database with another
/// service's migrations without their versions colliding.
pub(crate) const MIGRATIONS: Migrations = Migrations {
    table: "_levelrail_provisioner_migrations",
    sqlite: || sqlx::migrate!("./migrations/sqlite"),
    postgres: || sqlx::migrate!("./migrations/postgres"),
};

/// Every store trait of the provisioner over one database of dialect `D`.
#[derive(Debug, Clone)]
pub struct SqlStore<D: Dialect> {
    pub(crate) db: Db<D>,
    /// PostgreSQL's group commit of new provisions.
    pub(crate) inserts: Arc<InsertBatcher>,
}

/// The embedded default: a file in the data directory.
pub type SqliteStore = SqlStore<Sqlite>;
/// The engine for several control-plane replicas.
pub type PostgresStore = SqlStore<Postgres>;

impl<D: Dialect> SqlStore<D> {
    pub(crate) fn new(db: Db<D>) -> Self {
        SqlStore {
            db,
            inserts: Arc::default(),
        }
    }

    /// The database, for backend-specific tests.
    pub fn db(&self) -> &Db<D> {
        &self.db
    }
}

impl<D: Dialect> SqlStore<D> {
    /// Opens the database named by `dsn` (SQLite: `sqlite://PATH`, `sqlite:PATH` or
    /// `sqlite::memory:`, the file created with mode 0600, its parent directory must exist;
    /// PostgreSQL: `postgres://…`) and applies pending migrations. Errors never contain the
    /// DSN.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        Ok(Self::new(D::connect(dsn, &MIGRATIONS).await?))
    }
}
