//! Tests of the SQLite backend: conformance, the raw file holds no secret, file mode,
//! corrupt rows, migrations bookkeeping, the node claims index.
use std::sync::Arc;

use crate::store::conformance;
use crate::store::isolated::sqlite_store;
use crate::store::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_passes_conformance() {
    let (store, _dir, _path) = sqlite_store().await;
    conformance::run(Arc::new(store)).await;
}

#[tokio::test]
async fn sqlite_database_files_contain_no_token_secret() {
    // Arrange
    let (store, _dir, path) = sqlite_store().await;
    let tokens = conformance::store_canary_tokens(&store).await;
    // Act: read the main file and the WAL (where recent pages live) byte for byte.
    let mut dump = std::fs::read(&path).expect("read db file");
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if let Ok(bytes) = std::fs::read(&wal) {
        dump.extend_from_slice(&bytes);
    }
    // Assert
    let hashes = store.list_join_tokens().await.expect("list");
    assert!(
        hashes.iter().any(|t| contains(&dump, &t.secret_sha256)),
        "the dump does not even contain the hashes: it would not show a secret either"
    );
    conformance::assert_dump_holds_no_secret(&dump, &tokens);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn sqlite_database_file_is_created_with_mode_0600() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_store, _dir, path) = sqlite_store().await;

    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;

    assert_eq!(mode, 0o600, "database file has mode {mode:o}");
}

#[tokio::test]
async fn migrations_are_tracked_in_the_provisioner_table_and_rerun_cleanly() {
    let (store, _dir, path) = sqlite_store().await;
    let applied: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM _levelrail_provisioner_migrations WHERE success")
            .fetch_one(store.db().pool())
            .await
            .expect("count migrations");
    store.db().close().await;

    SqliteStore::connect(&format!("sqlite:{}", path.display()))
        .await
        .expect("reopens");

    assert_eq!(
        applied, 12,
        "expected exactly the node, provision, agent-binary, docker-version, orphan, \
         any-provider, lease-epoch, replicas, audit, certificate-expiry, node-claims-index \
         and provision-leases migrations"
    );
}

#[tokio::test]
async fn a_node_deletion_finds_its_name_claim_by_the_node_claims_index() {
    // Provision claims stay out of the holder index (migration 0011); the one statement
    // that reads claims by holder must still find it rather than scan every claim.
    let (store, _dir, _path) = sqlite_store().await;
    let plan: Vec<String> = sqlx::query(
        "EXPLAIN QUERY PLAN \
         DELETE FROM name_claims WHERE holder_kind = 'node' AND holder_id = 'nod_x'",
    )
    .fetch_all(store.db().pool())
    .await
    .expect("plan")
    .iter()
    .map(|row| sqlx::Row::get::<String, _>(row, "detail"))
    .collect();
    assert!(
        plan.iter()
            .any(|d| d.contains("USING INDEX name_claims_node_idx")),
        "{plan:?}"
    );
}

#[tokio::test]
async fn a_row_with_an_unknown_role_is_reported_as_corrupt_without_its_value() {
    let (store, _dir, _path) = sqlite_store().await;
    // One connection: the pragma is per connection.
    let mut conn = store.db().pool().acquire().await.expect("connection");
    sqlx::query("PRAGMA ignore_check_constraints = ON")
        .execute(&mut *conn)
        .await
        .expect("pragma");
    sqlx::query(
        "INSERT INTO join_tokens (id, secret_sha256, role, created_at, expires_at) \
         VALUES ('njt_0123456789abcdef', zeroblob(32), 'superuser', \
         '2030-01-01T00:00:00.000000Z', '2030-01-01T00:15:00.000000Z')",
    )
    .execute(&mut *conn)
    .await
    .expect("raw insert");
    drop(conn);

    let err = store.list_join_tokens().await.expect_err("list must fail");

    assert!(matches!(err, StoreError::Corrupt(_)), "got {err:?}");
    assert!(!err.to_string().contains("superuser"), "{err}");
}
