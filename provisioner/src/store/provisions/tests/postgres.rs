//! The provision conformance suite on PostgreSQL, group commit, lease renewals, and the
//! lease table migration of provisions in flight.
use std::sync::Arc;

use levelrail_db::{Db, Dialect as _, Migrations, Postgres};

use crate::model::ports::ProvisionStore as _;
use crate::model::provision::ProvisionId;
use crate::store::SqlStore;
use crate::store::isolated::with_postgres_store;
use crate::store::provisions::conformance;
use crate::store::provisions::conformance::fixtures;
use crate::store::sql::MIGRATIONS;

/// The last migration before the lease table (`0014_provision_leases.sql`).
const BEFORE_LEASE_TABLE: i64 = 13;

/// The provisioner's migrations up to `BEFORE_LEASE_TABLE`, as an older release left a
/// database.
const OLDER_RELEASE: Migrations = Migrations {
    postgres: || {
        let mut migrator = (MIGRATIONS.postgres)();
        let older: Vec<_> = migrator
            .migrations
            .iter()
            .filter(|m| m.version <= BEFORE_LEASE_TABLE)
            .cloned()
            .collect();
        migrator.migrations = older.into();
        migrator
    },
    ..MIGRATIONS
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_of_provisions_in_flight_survive_the_lease_table_migration() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "leases_of_provisions_in_flight_survive_the_lease_table_migration",
        &OLDER_RELEASE,
        |db| async move {
            // Arrange: a provision in flight leased to a replica of an older release, and a
            // finished one, in the provisions table's lease columns.
            let (in_flight, finished) = (ProvisionId::generate(), ProvisionId::generate());
            let (owner, until, epoch) = fixtures::OLD_LEASE;
            let leases = [
                (
                    &in_flight,
                    "old-in-flight",
                    "booting",
                    Some(owner),
                    Some(until),
                ),
                (&finished, "old-finished", "ready", None, None),
            ];
            for (id, name, status, owner, until) in leases {
                sqlx::query(
                    "INSERT INTO provisions (id, provider, region, size, name, role, status, \
                     keep_on_failure, control_plane_addr, credential_id, saga_step, generation, \
                     lease_owner, lease_until, lease_epoch, created_at, updated_at) \
                     VALUES ($1, 'hetzner', 'fsn1', 'cx22', $2, 'general', $3, FALSE, \
                     'cp.example.com:9443', 'cred_1', 'wait_running', 3, $4, $5, $6, \
                     '2031-03-01T09:00:00Z', '2031-03-01T09:00:00Z')",
                )
                .bind(id.as_str())
                .bind(name)
                .bind(status)
                .bind(owner)
                .bind(until)
                .bind(i64::try_from(epoch).expect("small"))
                .execute(db.pool())
                .await
                .expect("old provision");
            }

            // Act: the current release's migrations, as its first start runs them.
            Postgres::migrate(
                &mut *db.pool().acquire().await.expect("a connection"),
                &MIGRATIONS,
            )
            .await
            .expect("migrates to the current schema");
            let store = SqlStore::new(db);

            // Assert
            fixtures::check_migrated_leases(&store, &in_flight, &finished).await;
            let leased: Vec<String> =
                sqlx::query_scalar("SELECT provision_id FROM provision_leases")
                    .fetch_all(store.db().pool())
                    .await
                    .expect("lease rows");
            assert_eq!(
                leased,
                [in_flight.as_str()],
                "a lease row per provision in flight"
            );
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_provision_conformance() {
    with_postgres_store(
        "postgres_store_passes_provision_conformance",
        |store| async move { conformance::run(Arc::new(store)).await },
    )
    .await;
}

/// Concurrent `Provision` writes go to PostgreSQL together: fewer statements than requests,
/// each request answered from its own row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_provisions_are_written_in_batches() {
    with_postgres_store(
        "concurrent_provisions_are_written_in_batches",
        |store| async move {
            let inserts = Arc::clone(&store.inserts);
            conformance::concurrent_inserts_each_get_their_own_answer(Arc::new(store)).await;
            let (statements, requests) = inserts.committed();
            assert!(
                requests >= 46 && statements < requests,
                "{statements} batch statements carried {requests} requests"
            );
        },
    )
    .await;
}

/// A renewal changes the lease row alone: the provision's row (its saga log, stages and
/// sealed token) keeps its version (`xmin`, the transaction that wrote it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewal_writes_no_provision_row() {
    with_postgres_store(
        "a_lease_renewal_writes_no_provision_row",
        |store| async move {
            // Arrange
            let r = fixtures::record("renewed", fixtures::T0);
            store.insert_provision(&r).await.expect("insert");
            // The lease as of the suite's clock (the insert's runs on the database's).
            let epoch = store
                .acquire_lease(
                    &r.id,
                    fixtures::OWNER,
                    fixtures::T0,
                    fixtures::T0 + time::Duration::minutes(1),
                )
                .await
                .expect("acquire")
                .expect("free");
            let version = || {
                sqlx::query_scalar::<_, String>("SELECT xmin::text FROM provisions WHERE id = $1")
                    .bind(r.id.as_str())
                    .fetch_one(store.db().pool())
            };
            let before = version().await.expect("version");

            // Act and assert: the lease moved, the provision row kept its version.
            fixtures::renew_for_two_minutes(&store, &r.id, epoch).await;
            assert_eq!(
                version().await.expect("version"),
                before,
                "the provision row was written"
            );
        },
    )
    .await;
}
