//! Tests of `delete_node` with `destroy_server`: the server goes first, through the
//! `ServerTeardown` hook, and the record only when that worked.
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{Role, enroll, token};
use crate::app::{NodesError, ServerTeardown};
use crate::store::MemoryStore;
use crate::test_support::{self, ManualClock};

/// Records the provisions whose servers it was asked to destroy; fails when told to.
#[derive(Debug, Default)]
struct RecordingTeardown {
    destroyed: Mutex<Vec<String>>,
    fail: bool,
}

#[async_trait]
impl ServerTeardown for RecordingTeardown {
    async fn destroy_server(&self, provision_id: &str) -> Result<(), NodesError> {
        if self.fail {
            return Err(NodesError::FailedPrecondition("provider refused".into()));
        }
        self.destroyed
            .lock()
            .expect("lock")
            .push(provision_id.to_owned());
        Ok(())
    }
}

fn nodes_with(teardown: Arc<RecordingTeardown>) -> crate::app::Nodes {
    let clock = ManualClock::new();
    crate::app::Nodes::with_clock(
        Arc::new(MemoryStore::new()),
        test_support::ca(),
        clock.clock(),
    )
    .with_server_teardown(teardown)
}

#[tokio::test]
async fn destroying_a_provisioned_node_destroys_its_server_then_deletes_the_record() {
    let teardown = Arc::new(RecordingTeardown::default());
    let nodes = nodes_with(Arc::clone(&teardown));
    let (_, t) = token(&nodes, None, Some("prv_9"), Role::General).await;
    let (node, _) = enroll(&nodes, &t, "web-1").await.expect("enroll");

    nodes.delete_node(&node.id, true).await.expect("delete");

    assert_eq!(
        *teardown.destroyed.lock().expect("lock"),
        vec!["prv_9".to_owned()]
    );
    assert!(matches!(
        nodes.get_node(&node.id).await,
        Err(NodesError::NotFound { .. })
    ));
}

#[tokio::test]
async fn a_failed_teardown_keeps_the_node_record() {
    let teardown = Arc::new(RecordingTeardown {
        fail: true,
        ..Default::default()
    });
    let nodes = nodes_with(teardown);
    let (_, t) = token(&nodes, None, Some("prv_9"), Role::General).await;
    let (node, _) = enroll(&nodes, &t, "web-1").await.expect("enroll");

    let result = nodes.delete_node(&node.id, true).await;

    assert!(
        matches!(result, Err(NodesError::FailedPrecondition(_))),
        "{result:?}"
    );
    nodes.get_node(&node.id).await.expect("the record is kept");
}

#[tokio::test]
async fn without_a_teardown_a_provisioned_node_is_not_deleted_when_its_server_should_go() {
    let (nodes, _clock) = test_support::nodes();
    let (_, t) = token(&nodes, None, Some("prv_9"), Role::General).await;
    let (node, _) = enroll(&nodes, &t, "web-1").await.expect("enroll");

    let result = nodes.delete_node(&node.id, true).await;

    assert!(
        matches!(result, Err(NodesError::FailedPrecondition(_))),
        "{result:?}"
    );
    nodes.get_node(&node.id).await.expect("the record is kept");
    nodes
        .delete_node(&node.id, false)
        .await
        .expect("record-only delete works");
}

#[tokio::test]
async fn destroy_server_on_a_manually_joined_node_deletes_only_the_record() {
    let teardown = Arc::new(RecordingTeardown::default());
    let nodes = nodes_with(Arc::clone(&teardown));
    let (_, t) = token(&nodes, None, None, Role::General).await;
    let (node, _) = enroll(&nodes, &t, "web-1").await.expect("enroll");

    nodes.delete_node(&node.id, true).await.expect("delete");

    assert!(teardown.destroyed.lock().expect("lock").is_empty());
    assert!(matches!(
        nodes.get_node(&node.id).await,
        Err(NodesError::NotFound { .. })
    ));
}
