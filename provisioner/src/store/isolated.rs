//! Test support: a fresh store per test on each backend. PostgreSQL tests run only when
//! `LEVELRAIL_TEST_POSTGRES_URL` names a server, each in a throw-away schema that is
//! dropped even when the test fails.
use std::future::Future;
use std::path::PathBuf;

use levelrail_db::{Db, Postgres};

use super::sql::MIGRATIONS;
use super::{PostgresStore, SqlStore, SqliteStore};

/// A fresh database file in a new temporary directory (kept alive by the returned guard).
pub(crate) async fn sqlite_store() -> (SqliteStore, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("provisioner.db");
    let store = SqliteStore::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("sqlite store opens");
    (store, dir, path)
}

/// Runs `test` against a store in a fresh schema, or skips (with a note) without a server.
pub(crate) async fn with_postgres_store<F, Fut>(name: &str, test: F)
where
    F: FnOnce(PostgresStore) -> Fut,
    Fut: Future<Output = ()>,
{
    Db::<Postgres>::with_isolated_schema_for_tests(name, &MIGRATIONS, |db| test(SqlStore::new(db)))
        .await;
}
