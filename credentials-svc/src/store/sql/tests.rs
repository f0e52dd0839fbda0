//! The store on each backend: conformance, and (SQLite) file mode, corrupt rows,
//! in-memory DSNs.
use std::path::Path;
use std::sync::Arc;

use levelrail_db::{Db, Postgres};

use super::*;

/// A fresh database file in a new temporary directory (kept alive by the returned guard).
async fn fresh_store() -> (SqliteStore, tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("credentials.db");
    let store = SqliteStore::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("sqlite store opens");
    (store, dir, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_passes_conformance() {
    let (store, _dir, _path) = fresh_store().await;
    crate::store::conformance::run(Arc::new(store)).await;
}

#[cfg(unix)]
#[tokio::test]
async fn sqlite_database_file_is_created_with_mode_0600() {
    use std::os::unix::fs::PermissionsExt;
    // Arrange
    let (store, _dir, path) = fresh_store().await;
    // Act: a write makes SQLite create its WAL file too.
    store
        .put_api_token(&ApiTokenRecord {
            id: "lrt_mode".into(),
            secret_sha256: [7; 32],
            label: "admin".into(),
            created_at: time::OffsetDateTime::now_utc(),
            revoked_at: None,
            scope: levelrail_types::ApiScope::Admin,
            expires_at: None,
        })
        .await
        .expect("put token");
    // Assert
    for suffix in ["", "-wal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(meta) = std::fs::metadata(&p) {
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "credentials.db{suffix} has mode {mode:o}");
        } else {
            assert!(!suffix.is_empty(), "database file was not created");
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn reopening_tightens_an_existing_world_readable_file() {
    use std::os::unix::fs::PermissionsExt;
    let (store, _dir, path) = fresh_store().await;
    store.db().close().await;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    SqliteStore::connect(&format!("sqlite:{}", path.display()))
        .await
        .expect("reopens");

    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "reopened file has mode {mode:o}");
}

#[tokio::test]
async fn a_row_with_an_unknown_provider_is_reported_as_corrupt() {
    let (store, _dir, _path) = fresh_store().await;
    sqlx::query(
        "INSERT INTO credentials (id, provider, envelope, kek_id, identity_json, saved_at) \
         VALUES ('c1', 'ovh', x'00', 'k1', '{\"kind\":\"token\"}', \
         '2025-01-31T12:00:00.000000Z')",
    )
    .execute(store.db().pool())
    .await
    .expect("raw insert");

    let err = store.list_credentials().await.expect_err("list must fail");

    assert!(matches!(err, StoreError::Corrupt(_)), "got {err:?}");
}

#[tokio::test]
async fn an_in_memory_database_works_and_creates_no_file() {
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("opens");
    assert_eq!(store.count_api_tokens().await.expect("count"), 0);
    assert!(
        !Path::new(":memory:").exists(),
        "a file named :memory: was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_passes_conformance() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "postgres_store_passes_conformance",
        &MIGRATIONS,
        |db| async move { crate::store::conformance::run(Arc::new(SqlStore::new(db))).await },
    )
    .await;
}
