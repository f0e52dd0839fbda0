//! Opening stores by DSN, and (in `sqlite` and `postgres`) what only one backend shows:
//! files, modes, raw table dumps.
mod postgres;
mod sqlite;

use super::*;

#[tokio::test]
async fn open_memory_gives_an_empty_store() {
    let store = open("memory").await.expect("memory store opens");
    assert!(store.list_nodes().await.expect("list").is_empty());
}

#[tokio::test]
async fn open_sqlite_creates_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nodes.db");

    let store = open(&format!("sqlite:{}", path.display()))
        .await
        .expect("opens");

    assert!(store.list_join_tokens().await.expect("list").is_empty());
    assert!(path.exists(), "sqlite file was not created");
}
