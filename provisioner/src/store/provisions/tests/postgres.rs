//! The provision conformance suite on PostgreSQL.
use std::sync::Arc;

use crate::store::isolated::with_postgres_store;
use crate::store::provisions::conformance;

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
