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
