//! The provision conformance suite on PostgreSQL, group commit, and lease renewals.
use std::sync::Arc;

use crate::model::ports::ProvisionStore as _;
use crate::store::isolated::with_postgres_store;
use crate::store::provisions::conformance;
use crate::store::provisions::conformance::fixtures;

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
