//! Tests of the PostgreSQL backend, run only when `LEVELRAIL_TEST_POSTGRES_URL` names a
//! server. Each test works in its own throw-away schema, dropped even when it fails.
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;

use super::PostgresStore;
use crate::store::conformance;

/// Runs `test` against a fresh isolated store, or skips (with a note) without a server.
async fn with_isolated_store<F, Fut>(name: &str, test: F)
where
    F: FnOnce(PostgresStore) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
        eprintln!("skipping {name}: LEVELRAIL_TEST_POSTGRES_URL unset");
        return;
    };
    let url = url
        .into_string()
        .expect("LEVELRAIL_TEST_POSTGRES_URL is not UTF-8");
    let (store, schema) = PostgresStore::connect_isolated_for_tests(&url)
        .await
        .expect("postgres store opens in a fresh schema");

    let outcome = AssertUnwindSafe(test(store.clone())).catch_unwind().await;

    store
        .drop_isolated_schema_for_tests(&schema)
        .await
        .expect("test schema drops");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_conformance() {
    with_isolated_store("postgres_store_passes_conformance", |store| async move {
        conformance::run(Arc::new(store)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_table_dump_contains_no_token_secret() {
    with_isolated_store(
        "postgres_table_dump_contains_no_token_secret",
        |store| async move {
            // Arrange
            let tokens = conformance::store_canary_tokens(&store).await;
            // Act: every row of every table, as PostgreSQL's own text rendering.
            let mut dump = String::new();
            for sql in [
                "SELECT t::text FROM join_tokens t",
                "SELECT n::text FROM nodes n",
                "SELECT p::text FROM install_progress p",
            ] {
                let rows: Vec<String> = sqlx::query_scalar(sql)
                    .fetch_all(store.pool())
                    .await
                    .expect("dump table");
                dump.extend(rows.into_iter().map(|r| r + "\n"));
            }
            // Assert
            assert!(
                dump.contains("njt_"),
                "the dump lacks the token rows: {dump}"
            );
            conformance::assert_dump_holds_no_secret(dump.as_bytes(), &tokens);
        },
    )
    .await;
}
