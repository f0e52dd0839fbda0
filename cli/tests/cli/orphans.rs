//! `nodes orphans list|adopt|delete`: the table and `--json`, the env file alone on stdout
//! for `adopt`, the outcome of `delete`, NOT_FOUND naming the orphan.
use levelrail_proto::nodes::v1::{Orphan, OrphanReason, OrphanState};

use crate::fake_nodes::{CA_FINGERPRINT, EXPIRES, TOKEN_SECRET};
use crate::helpers::{FakeSecrets, TestServer, provider_value};

const ID: &str = "nor_0123456789abcdef0123456789abcdef";

fn orphan(last_error: &str) -> Orphan {
    Orphan {
        id: ID.into(),
        provider: provider_value("hetzner"),
        server_id: "4711".into(),
        provision_id: "npv_fedcba9876543210fedcba9876543210".into(),
        node_name: "stray-1".into(),
        region: "fsn1".into(),
        reason: OrphanReason::UnknownProvision.into(),
        first_seen: Some(EXPIRES),
        attempts: 0,
        last_error: last_error.into(),
        state: OrphanState::Pending.into(),
    }
}

async fn server_with(o: Orphan) -> TestServer {
    let server = TestServer::start().await;
    server.nodes().orphans.push(o);
    server
}

#[tokio::test]
async fn list_shows_each_orphan_with_its_state_and_reason() {
    let server = server_with(orphan("")).await;

    let out = server
        .run(&["nodes", "orphans", "list"], FakeSecrets::none())
        .await;

    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("ID"), "{}", out.stdout);
    for cell in [
        ID,
        "hetzner",
        "4711",
        "stray-1",
        "pending",
        "unknown provision",
    ] {
        assert!(lines[1].contains(cell), "{cell} missing: {}", out.stdout);
    }
}

#[tokio::test]
async fn list_json_names_every_field() {
    let server = server_with(orphan("")).await;

    let out = server
        .run(&["--json", "nodes", "orphans", "list"], FakeSecrets::none())
        .await;

    assert_eq!(out.code, 0, "{out:?}");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let o = &v["orphans"][0];
    assert_eq!(o["id"], ID);
    assert_eq!(o["provider"], "hetzner");
    assert_eq!(o["state"], "pending");
    assert_eq!(o["reason"], "unknown provision");
    assert_eq!(o["first_seen"], "2026-01-02T03:19:05Z");
}

#[tokio::test]
async fn adopt_prints_the_env_file_alone_on_stdout_and_the_steps_on_stderr() {
    let server = server_with(orphan("")).await;

    let out = server
        .run(&["nodes", "orphans", "adopt", ID], FakeSecrets::none())
        .await;

    assert_eq!(out.code, 0, "{out:?}");
    let token = format!("LR1.{CA_FINGERPRINT}.njt_adopt.{TOKEN_SECRET}");
    assert_eq!(
        out.stdout,
        format!(
            "APP_CONTROL_PLANE_ADDR=cp.example.com:9443\nAPP_JOIN_TOKEN={token}\nAPP_NODE_NAME=stray-1\n"
        )
    );
    assert!(
        out.stderr.contains("/etc/levelrail/agent.env"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("levelrail-agent --env-file /etc/levelrail/agent.env"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains(TOKEN_SECRET),
        "the token leaked to stderr"
    );
    assert_eq!(server.nodes().orphan_requests, vec![ID.to_owned()]);
}

#[tokio::test]
async fn delete_reports_the_server_deleted() {
    let server = server_with(orphan("")).await;

    let out = server
        .run(&["nodes", "orphans", "delete", ID], FakeSecrets::none())
        .await;

    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("orphan {ID}: server deleted\n"));
}

#[tokio::test]
async fn delete_that_fails_at_the_provider_exits_1_with_the_error() {
    let server = server_with(orphan("could not delete the server: forbidden")).await;

    let out = server
        .run(
            &["--json", "nodes", "orphans", "delete", ID],
            FakeSecrets::none(),
        )
        .await;

    assert_eq!(out.code, 1, "{out:?}");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["deleted"], false);
    assert_eq!(
        v["orphan"]["last_error"],
        "could not delete the server: forbidden"
    );
}

#[tokio::test]
async fn an_unknown_orphan_is_not_found() {
    let server = TestServer::start().await;

    let out = server
        .run(&["nodes", "orphans", "adopt", ID], FakeSecrets::none())
        .await;

    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains(ID), "{}", out.stderr);
}
