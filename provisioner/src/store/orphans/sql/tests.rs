//! The orphan conformance suite on each backend.
use crate::store::isolated::{sqlite_store, with_postgres_store};
use crate::store::orphans::conformance;

#[tokio::test]
async fn sqlite_store_passes_orphan_conformance() {
    let (store, _dir, _path) = sqlite_store().await;
    conformance::run(&store).await;
}

#[tokio::test]
async fn postgres_store_passes_orphan_conformance() {
    with_postgres_store(
        "postgres_store_passes_orphan_conformance",
        |store| async move {
            conformance::run(&store).await;
        },
    )
    .await;
}
