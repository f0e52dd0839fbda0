//! The provision conformance suite on SQLite, and the claims migration of existing nodes.
use std::sync::Arc;

use crate::model::ports::StoreError;
use crate::model::ports::{NodeStore as _, ProvisionStore as _};
use crate::model::provision::ClaimHolder;
use crate::store::SqliteStore;
use crate::store::isolated::sqlite_store;
use crate::store::provisions::conformance;
use crate::store::provisions::conformance::fixtures;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_passes_provision_conformance() {
    let (store, _dir, _path) = sqlite_store().await;
    conformance::run(Arc::new(store)).await;
}

#[tokio::test]
async fn nodes_enrolled_before_the_claims_migration_keep_their_names() {
    // Arrange: a database at migration 1 with one node, as an older release left it.
    let dir = tempfile::tempdir().expect("temp dir");
    let dsn = format!("sqlite://{}", dir.path().join("old.db").display());
    let options: sqlx::sqlite::SqliteConnectOptions = dsn.parse().expect("dsn");
    let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true))
        .await
        .expect("pool");
    let mut migrator = sqlx::migrate!("./migrations/sqlite");
    migrator.dangerous_set_table_name(crate::store::sql::MIGRATIONS.table);
    migrator.run_to(1, &pool).await.expect("migration 1");
    let node_id = crate::model::NodeId::generate();
    sqlx::query(
        "INSERT INTO nodes (id, name, agent_version, workload_kinds, enrolled_at, last_seen_at, \
         cert_serial, cert_fingerprint) VALUES (?, 'old-node', '1', '[\"apps\"]', \
         '2030-01-01T00:00:00.000000Z', '2030-01-01T00:00:00.000000Z', '01', 'ab')",
    )
    .bind(node_id.as_str())
    .execute(&pool)
    .await
    .expect("old node");
    pool.close().await;

    // Act
    let store = SqliteStore::connect(&dsn)
        .await
        .expect("migrates to the current schema");

    // Assert
    let name = crate::model::NodeName::parse("old-node").expect("name");
    assert_eq!(
        store.name_claim(&name).await.expect("claim"),
        Some(ClaimHolder::Node(node_id.clone()))
    );
    assert!(store.delete_node(&node_id).await.expect("delete"));
    assert_eq!(store.name_claim(&name).await.expect("claim"), None);
}

#[tokio::test]
async fn the_schema_takes_any_cloud_and_the_store_refuses_to_read_one_it_does_not_know() {
    // Arrange: a provision, then its cloud renamed behind the store's back (as a newer
    // release with a sixth cloud could leave it).
    let (store, _dir, path) = sqlite_store().await;
    let r = fixtures::record("unknown-cloud", fixtures::T0);
    store.insert_provision(&r).await.expect("insert");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("pool");
    sqlx::query("UPDATE provisions SET provider = 'example-cloud' WHERE id = ?")
        .bind(r.id.as_str())
        .execute(&pool)
        .await
        .expect("the schema lists no clouds");

    // Act
    let read = store.get_provision(&r.id).await;

    // Assert
    match read {
        Err(StoreError::Corrupt(m)) => assert!(m.contains("provider"), "{m}"),
        other => panic!("read as {other:?}"),
    }
}
