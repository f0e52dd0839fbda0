//! `nodes list|show|delete`: the table with ROLE from workload kinds, the key/value view,
//! JSON, the delete message, and NOT_FOUND.
use levelrail_proto::nodes::v1::{Node, NodeStatus, WorkloadKind};

use crate::fake_provisioner::at;
use crate::helpers::{FakeSecrets, TestServer};

fn node(id: &str, name: &str, kinds: &[WorkloadKind], status: NodeStatus) -> Node {
    Node {
        id: id.into(),
        name: name.into(),
        addresses: vec!["10.0.0.5".into(), "203.0.113.7".into()],
        agent_version: "0.1.0".into(),
        enrolled_at: at(0),
        last_seen_at: at(65),
        workload_kinds: kinds.iter().map(|k| *k as i32).collect(),
        status: status as i32,
        provision_id: String::new(),
        docker_version: String::new(),
        certificate_expires_at: at(86_400),
        ..Default::default()
    }
}

async fn server_with_nodes() -> TestServer {
    let server = TestServer::start().await;
    let mut builder = node(
        "node_2",
        "build-1",
        &[WorkloadKind::Builds],
        NodeStatus::Offline,
    );
    builder.provision_id = "npv_3".into();
    builder.provider = levelrail_proto::credentials::v1::Provider::Hetzner as i32;
    builder.region = "fsn1".into();
    builder.size = "cx22".into();
    builder.server_id = "4711".into();
    builder.addresses = vec!["198.51.100.4".into()];
    let mut fresh = node("node_3", "spare", &[], NodeStatus::Unspecified);
    fresh.last_seen_at = None;
    fresh.addresses.clear();
    let mut web = node("node_1", "web-1", &[WorkloadKind::Apps], NodeStatus::Online);
    web.docker_version = "27.5.1".into();
    server.nodes().nodes = vec![web, builder, fresh];
    server
}

#[tokio::test]
async fn list_prints_a_table_with_the_role_taken_from_the_workload_kinds() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server.run(&["nodes", "list"], FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let expected = "\
ID      NAME     STATUS   ROLE     ADDRESSES             DOCKER  LAST SEEN
node_1  web-1    online   general  10.0.0.5,203.0.113.7  27.5.1  2026-01-02T03:05:10Z
node_2  build-1  offline  build    198.51.100.4          -       2026-01-02T03:05:10Z
node_3  spare    unknown  -        -                     -       never
";
    assert_eq!(out.stdout, expected);
    assert_eq!(out.stderr, "");
}

#[tokio::test]
async fn list_json_prints_every_node_with_role_and_kinds() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(&["nodes", "list", "--json"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    let nodes = doc["nodes"].as_array().expect("nodes array");
    assert_eq!(nodes.len(), 3);
    assert_eq!(
        nodes[1],
        serde_json::json!({
            "id": "node_2",
            "name": "build-1",
            "status": "offline",
            "role": "build",
            "workload_kinds": ["builds"],
            "addresses": ["198.51.100.4"],
            "agent_version": "0.1.0",
            "docker_version": "",
            "enrolled_at": "2026-01-02T03:04:05Z",
            "last_seen_at": "2026-01-02T03:05:10Z",
            "provision_id": "npv_3",
            "certificate_expires_at": "2026-01-03T03:04:05Z",
            "provider": "hetzner",
            "region": "fsn1",
            "size": "cx22",
            "server_id": "4711",
        })
    );
    assert_eq!(nodes[2]["last_seen_at"], serde_json::Value::Null);
}

#[tokio::test]
async fn show_prints_a_key_value_view_of_the_node() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(&["nodes", "show", "node_2"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let expected = "\
id:                   node_2
name:                 build-1
status:               offline
role:                 build
workload kinds:       builds
addresses:            198.51.100.4
agent version:        0.1.0
docker:               not reported (no engine answered the agent's last heartbeat, or none yet)
enrolled:             2026-01-02T03:04:05Z
last seen:            2026-01-02T03:05:10Z
certificate expires:  2026-01-03T03:04:05Z
provision:            npv_3
provider:             hetzner
region:               fsn1
size:                 cx22
server id:            4711
";
    assert_eq!(out.stdout, expected);
    assert_eq!(server.nodes().get_requests, ["node_2"]);
}

#[tokio::test]
async fn list_sends_the_filters_and_refuses_bad_ones_before_connecting() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "list",
                "--status",
                "online",
                "--provider",
                "aws",
                "--role",
                "build",
            ],
            FakeSecrets::none(),
        )
        .await;
    let bad = server
        .run(&["nodes", "list", "--role", "db"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let sent = server.nodes().list_requests.clone();
    assert_eq!(sent.len(), 2, "two pages: {sent:?}");
    for request in &sent {
        assert_eq!(request.status, NodeStatus::Online as i32);
        assert_eq!(
            request.provider,
            levelrail_proto::credentials::v1::Provider::Aws as i32
        );
        assert_eq!(request.workload_kind, WorkloadKind::Builds as i32);
    }
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("--role must be general or build"),
        "{bad:?}"
    );
    assert_eq!(server.nodes().list_requests.len(), 2, "nothing sent");
}

#[tokio::test]
async fn show_json_wraps_the_node() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(&["--json", "nodes", "show", "node_1"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["node"]["role"], "general");
    assert_eq!(out.json()["node"]["status"], "online");
    assert_eq!(out.json()["node"]["docker_version"], "27.5.1");
}

#[tokio::test]
async fn show_and_delete_of_an_unknown_node_say_not_found() {
    for command in ["show", "delete"] {
        // Arrange
        let server = server_with_nodes().await;

        // Act
        let out = server
            .run(&["nodes", command, "node_404"], FakeSecrets::none())
            .await;

        // Assert
        assert_eq!(out.code, 1, "{command}: {out:?}");
        assert_eq!(out.stderr, "error: node node_404 not found\n");
        assert_eq!(out.stdout, "");
    }
}

#[tokio::test]
async fn delete_removes_the_record_and_says_the_vm_is_not_deleted() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(&["nodes", "delete", "node_1"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "node node_1 deleted; the VM, if any, is not deleted\n"
    );
    assert_eq!(server.nodes().delete_requests, ["node_1"]);
    assert_eq!(server.nodes().nodes.len(), 2);
}

#[tokio::test]
async fn delete_json_reports_the_record_deleted_and_the_vm_kept() {
    // Arrange
    let server = server_with_nodes().await;

    // Act
    let out = server
        .run(
            &["--json", "nodes", "delete", "node_1"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json(),
        serde_json::json!({ "id": "node_1", "deleted": true, "vm_deleted": false })
    );
}
