//! The provision conformance suite on SQLite, and the claims migration of existing nodes.
use std::sync::Arc;

use crate::model::ports::StoreError;
use crate::model::ports::{NodeStore as _, ProvisionStore as _};
use crate::model::provision::{ClaimHolder, ProvisionId};
use crate::store::SqliteStore;
use crate::store::isolated::sqlite_store;
use crate::store::provisions::conformance;
use crate::store::provisions::conformance::fixtures;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_passes_provision_conformance() {
    let (store, _dir, _path) = sqlite_store().await;
    conformance::run(Arc::new(store)).await;
}

/// A database file migrated up to migration `n` (as an older release left it): its
/// directory, its address and a pool on it.
async fn database_at_migration(n: i64) -> (tempfile::TempDir, String, sqlx::SqlitePool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let dsn = format!("sqlite://{}", dir.path().join("old.db").display());
    let options: sqlx::sqlite::SqliteConnectOptions = dsn.parse().expect("dsn");
    let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true))
        .await
        .expect("pool");
    let mut migrator = sqlx::migrate!("./migrations/sqlite");
    migrator.dangerous_set_table_name(crate::store::sql::MIGRATIONS.table);
    migrator.run_to(n, &pool).await.expect("migrations");
    (dir, dsn, pool)
}

#[tokio::test]
async fn nodes_enrolled_before_the_claims_migration_keep_their_names() {
    // Arrange: a database at migration 1 with one node, as an older release left it.
    let (_dir, dsn, pool) = database_at_migration(1).await;
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

#[tokio::test]
async fn leases_of_provisions_in_flight_survive_the_lease_table_migration() {
    // Arrange: a database at migration 11 (leases on the provision rows) with a provision
    // in flight leased to a replica of an older release, and a finished one.
    let (_dir, dsn, pool) = database_at_migration(11).await;
    let (in_flight, finished) = (ProvisionId::generate(), ProvisionId::generate());
    let (owner, until, epoch) = fixtures::OLD_LEASE;
    let until = levelrail_db::format_timestamp(until).expect("in range");
    let leases = [
        (
            &in_flight,
            "old-in-flight",
            "booting",
            Some(owner),
            Some(until.as_str()),
        ),
        (&finished, "old-finished", "ready", None, None),
    ];
    for (id, name, status, owner, until) in leases {
        sqlx::query(
            "INSERT INTO provisions (id, provider, region, size, name, role, status, \
             keep_on_failure, control_plane_addr, credential_id, saga_step, generation, \
             lease_owner, lease_until, lease_epoch, created_at, updated_at) \
             VALUES (?, 'hetzner', 'fsn1', 'cx22', ?, 'general', ?, 0, 'cp.example.com:9443', \
             'cred_1', 'wait_running', 3, ?, ?, ?, '2031-03-01T09:00:00.000000Z', \
             '2031-03-01T09:00:00.000000Z')",
        )
        .bind(id.as_str())
        .bind(name)
        .bind(status)
        .bind(owner)
        .bind(until)
        .bind(i64::try_from(epoch).expect("small"))
        .execute(&pool)
        .await
        .expect("old provision");
    }
    pool.close().await;

    // Act
    let store = SqliteStore::connect(&dsn)
        .await
        .expect("migrates to the current schema");

    // Assert
    fixtures::check_migrated_leases(&store, &in_flight, &finished).await;
}

/// A renewal changes the lease row alone: the provision's row (its saga log, stages and
/// sealed token) is not written again every third of a lease.
#[tokio::test]
async fn a_lease_renewal_writes_no_provision_row() {
    // Arrange: a leased provision, and a trigger that refuses any write of a provision row.
    let (store, _dir, path) = sqlite_store().await;
    let r = fixtures::record("renewed", fixtures::T0);
    store.insert_provision(&r).await.expect("insert");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("pool");
    sqlx::query(
        "CREATE TRIGGER provisions_frozen BEFORE UPDATE ON provisions \
         BEGIN SELECT RAISE(ABORT, 'a provision row was written'); END",
    )
    .execute(&pool)
    .await
    .expect("trigger");

    // Act and assert: the renewal writes the lease alone (the trigger lets it through).
    fixtures::renew_for_two_minutes(&store, &r.id, r.lease_epoch).await;
}
