//! Exit codes and one-line messages of the real binary.

use std::time::Duration;

use tonic::Status;
use tonic::metadata::MetadataValue;

use crate::helpers::*;

fn refused(reason: &str, message: &str) -> Status {
    let mut status = Status::unauthenticated(message);
    status.metadata_mut().insert(
        "x-levelrail-reason",
        MetadataValue::try_from(reason).unwrap(),
    );
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_enrollment_refusal_exits_with_its_own_code_and_one_line() {
    let table = [
        (refused("expired", "join token expired"), 4, "expired"),
        (
            refused("used", "join token already used"),
            5,
            "already used",
        ),
        (refused("revoked", "join token revoked"), 6, "revoked"),
        (
            refused("unknown", "unknown join token"),
            7,
            "does not know it",
        ),
        (
            refused("wrong_name", "join token not valid for this name"),
            7,
            "node name web-1",
        ),
        (
            refused("fingerprint", "join token for another CA"),
            3,
            "another control-plane CA",
        ),
        (
            Status::failed_precondition("a concurrent redemption won"),
            5,
            "already used",
        ),
        (
            Status::already_exists("node name taken"),
            10,
            "already taken",
        ),
    ];
    let cp = FakeControlPlane::start().await;
    for (status, code, words) in table {
        let node = Node::new();
        let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
        *cp.state.enroll_reply.lock().unwrap() = Some(status.clone());

        let run = run_once(&env_file, &[]).await;

        assert_eq!(run.code, Some(code), "{status:?}\n{}", run.stderr);
        let line = run.last_line();
        assert!(
            line.starts_with("levelrail-agent: ") && line.contains(words),
            "{line}"
        );
        run.assert_no_secret();
        assert!(!node.identity_path().exists());
    }
    // Refusals are final: one Enroll call per run, no retries.
    assert_eq!(cp.state.enroll_calls(), 8);
    assert_eq!(cp.state.heartbeat_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_refusal_messages_name_the_token_id_only() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    *cp.state.enroll_reply.lock().unwrap() = Some(refused("expired", "join token expired"));

    let run = run_agent(
        &["--env-file", env_file.to_str().unwrap(), "--once"],
        &[("LEVELRAIL_LOG", "trace")],
    )
    .await;

    assert_eq!(run.code, Some(4));
    assert!(run.last_line().contains(TOKEN_ID), "{}", run.last_line());
    run.assert_no_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_on_the_control_plane_exits_9_on_its_heartbeat() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    assert_eq!(run_once(&env_file, &[]).await.code, Some(0));

    for status in [
        Status::not_found("no such node"),
        Status::unauthenticated("revoked"),
        Status::permission_denied("no"),
    ] {
        *cp.state.heartbeat_reply.lock().unwrap() = Some(status.clone());
        let run = run_once(&env_file, &[]).await;
        assert_eq!(run.code, Some(9), "{status:?}\n{}", run.stderr);
        assert!(run.last_line().contains(NODE_ID), "{}", run.last_line());
        assert!(
            run.last_line().contains("identity.json"),
            "{}",
            run.last_line()
        );
    }
    assert_eq!(cp.state.enroll_calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_control_plane_exits_8_within_the_retry_budget() {
    let node = Node::new();
    let fingerprint = "ab".repeat(32);
    let env_file = node.env_file(
        closed_port().await,
        &token(&fingerprint),
        &["APP_ENROLL_RETRY_SECONDS=2"],
    );

    let run = run_once(&env_file, &[]).await;

    assert_eq!(run.code, Some(8), "{}", run.stderr);
    assert!(
        run.last_line().contains("unreachable after 2s"),
        "{}",
        run.last_line()
    );
    assert!(
        run.elapsed >= Duration::from_millis(1900),
        "gave up too early: {:?}",
        run.elapsed
    );
    assert!(
        run.elapsed < Duration::from_secs(8),
        "ignored the budget: {:?}",
        run.elapsed
    );
    assert!(
        run.stderr
            .matches("enrollment attempt failed; retrying")
            .count()
            >= 2,
        "{}",
        run.stderr
    );
    run.assert_no_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_invalid_configuration_exits_2_naming_the_variable() {
    let node = Node::new();
    let table: &[(&[(&str, &str)], &str)] = &[
        (&[], "APP_CONTROL_PLANE_ADDR"),
        (
            &[("APP_CONTROL_PLANE_ADDR", "127.0.0.1:1")],
            "APP_NODE_NAME",
        ),
        (
            &[
                ("APP_CONTROL_PLANE_ADDR", "127.0.0.1:1"),
                ("APP_NODE_NAME", "n"),
            ],
            "APP_JOIN_TOKEN",
        ),
        (
            &[("APP_CONTROL_PLANE_ADDR", "not an address")],
            "APP_CONTROL_PLANE_ADDR",
        ),
        (&[("APP_NODE_NAME", "Bad_Name")], "APP_NODE_NAME"),
    ];
    let identity = node.identity_path();
    for (env, var) in table {
        let mut env = env.to_vec();
        env.push(("APP_AGENT_IDENTITY_FILE", identity.to_str().unwrap()));
        let run = run_agent(&["--once"], &env).await;
        assert_eq!(run.code, Some(2), "{env:?}\n{}", run.stderr);
        assert!(run.last_line().contains(var), "{var}: {}", run.last_line());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_env_file_exits_2_naming_the_line_but_not_its_content() {
    let node = Node::new();
    let path = node.dir.path().join("bad.env");
    std::fs::write(&path, format!("APP_NODE_NAME=n\n{SECRET}\n")).unwrap();

    let run = run_once(&path, &[]).await;

    assert_eq!(run.code, Some(2));
    assert!(run.last_line().contains("line 2"), "{}", run.last_line());
    run.assert_no_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_token_exits_7() {
    let node = Node::new();
    let env_file = node.env_file(closed_port().await, &format!("LR1.{SECRET}"), &[]);

    let run = run_once(&env_file, &[]).await;

    assert_eq!(run.code, Some(7), "{}", run.stderr);
    run.assert_no_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_the_exit_codes() {
    let output = agent_command(&["--help"], &[])
        .stdout(std::process::Stdio::piped())
        .output()
        .await
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    for line in [
        "--env-file",
        "--once",
        "Exit codes:",
        "3   CA pin mismatch",
        "8   control plane unreachable",
        "10  node name",
    ] {
        assert!(help.contains(line), "{line} missing from:\n{help}");
    }
}
