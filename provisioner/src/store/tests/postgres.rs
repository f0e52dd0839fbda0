//! Tests of the PostgreSQL backend, run only when `LEVELRAIL_TEST_POSTGRES_URL` names a
//! server. Each test works in its own throw-away schema, dropped even when it fails.
use std::sync::Arc;

use crate::store::conformance;
use crate::store::isolated::with_postgres_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_conformance() {
    with_postgres_store("postgres_store_passes_conformance", |store| async move {
        conformance::run(Arc::new(store)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_table_dump_contains_no_token_secret() {
    with_postgres_store(
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
                    .fetch_all(store.db().pool())
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
