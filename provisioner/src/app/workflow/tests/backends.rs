//! The whole workflow on the SQL backends, in real time: a provision reaches `ready`, and
//! afterwards the database holds no form of the join token (sealed or plain).
use std::sync::Arc;
use std::time::Duration;

use super::harness::{Harness, NAME};
use crate::app::WorkflowTuning;
use crate::model::ports::ProvisionerStore;
use crate::model::provision::ProvisionStatus;
use crate::store::conformance::assert_dump_holds_no_secret;
use crate::store::isolated::{sqlite_store, with_postgres_store};

fn quick() -> WorkflowTuning {
    WorkflowTuning {
        poll_initial: Duration::from_millis(20),
        poll_max: Duration::from_millis(50),
        db_tick: Duration::from_millis(50),
        follow_interval: Duration::from_millis(50),
        ..WorkflowTuning::default()
    }
}

/// Provisions to `ready` on `store`; returns the token the node used.
async fn provision_to_ready(store: Arc<dyn ProvisionerStore>) -> String {
    let h = Harness::on_store(store, quick());
    let p = h.provision(NAME).await;
    let ready = tokio::time::timeout(Duration::from_secs(30), h.complete(&p.id, NAME))
        .await
        .expect("in time");
    assert_eq!(ready.status, ProvisionStatus::Ready);
    let row = h
        .store
        .get_provision(&p.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.sealed_join_token, None,
        "the sealed token outlived the provision"
    );
    h.token(&p.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provision_on_sqlite_reaches_ready_and_leaves_no_token_in_the_database_files() {
    let (store, _dir, path) = sqlite_store().await;

    let token = provision_to_ready(Arc::new(store)).await;

    let mut dump = std::fs::read(&path).expect("db file");
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    dump.extend(std::fs::read(&wal).unwrap_or_default());
    assert_dump_holds_no_secret(&dump, &[token]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provision_on_postgres_reaches_ready() {
    with_postgres_store(
        "a_provision_on_postgres_reaches_ready",
        |store| async move {
            provision_to_ready(Arc::new(store)).await;
        },
    )
    .await;
}
