//! The provision conformance suite on PostgreSQL, run only when
//! `LEVELRAIL_TEST_POSTGRES_URL` names a server (in a throw-away schema).
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;

use crate::store::PostgresStore;
use crate::store::provisions::conformance;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_provision_conformance() {
    let Some(url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
        eprintln!(
            "skipping postgres_store_passes_provision_conformance: LEVELRAIL_TEST_POSTGRES_URL unset"
        );
        return;
    };
    let url = url
        .into_string()
        .expect("LEVELRAIL_TEST_POSTGRES_URL is not UTF-8");
    let (store, schema) = PostgresStore::connect_isolated_for_tests(&url)
        .await
        .expect("postgres store opens in a fresh schema");

    let outcome = AssertUnwindSafe(conformance::run(Arc::new(store.clone())))
        .catch_unwind()
        .await;

    store
        .drop_isolated_schema_for_tests(&schema)
        .await
        .expect("test schema drops");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
