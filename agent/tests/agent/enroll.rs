//! Enrollment and heartbeats against the fake control plane, through the real binary.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_enrolls_once_persists_its_identity_and_reuses_it_on_restart() {
    // Arrange
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);

    // Act: first start enrolls and heartbeats once.
    let first = run_once(&env_file, &[]).await;

    // Assert
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    first.assert_no_secret();
    assert_eq!(cp.state.enroll_calls(), 1);
    assert_eq!(cp.state.heartbeat_calls(), 1);
    {
        let requests = cp.state.enroll_requests.lock().unwrap();
        let request = &requests[0];
        assert_eq!(request.join_token, token(&cp.ca.fingerprint()));
        assert_eq!(request.node_name, "web-1");
        assert_eq!(request.agent_version, env!("CARGO_PKG_VERSION"));
        assert!(request.csr_pem.contains("BEGIN CERTIFICATE REQUEST"));
        assert!(request.addresses.iter().all(|a| a != "127.0.0.1"));
    }
    let path = node.identity_path();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stored["node_id"], NODE_ID);
    assert_eq!(stored["node_name"], "web-1");
    assert_eq!(stored["ca_fingerprint"], cp.ca.fingerprint());
    assert_eq!(stored["control_plane_addr"], cp.addr.to_string());
    assert!(stored["key_pem"].as_str().unwrap().contains("PRIVATE KEY"));

    // The heartbeat was authenticated by the issued client certificate.
    let issued = cp.state.issued_certs.lock().unwrap()[0].clone();
    let issued_der = rustls_pemfile::certs(&mut issued.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        cp.state.heartbeat_peer_certs.lock().unwrap()[0],
        issued_der.to_vec()
    );

    // The spent join token is gone from the disk.
    assert!(
        !node.token_path().exists(),
        "the agent deletes the join-token file once enrolled"
    );

    // Act: restart without the token; the identity suffices.
    let second = run_once(&env_file, &[]).await;

    // Assert: no second enrollment, one more heartbeat with the same certificate.
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(
        second.stderr.contains("not enrolling again"),
        "{}",
        second.stderr
    );
    assert_eq!(cp.state.enroll_calls(), 1);
    assert_eq!(cp.state.heartbeat_calls(), 2);
    assert_eq!(
        cp.state.heartbeat_peer_certs.lock().unwrap()[1],
        issued_der.to_vec()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_environment_variables_alone_configure_the_agent() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let addr = cp.addr.to_string();
    let token = token(&cp.ca.fingerprint());
    let identity = node.identity_path();
    let fingerprint = cp.ca.fingerprint();
    let env = [
        ("APP_CONTROL_PLANE_ADDR", addr.as_str()),
        ("APP_JOIN_TOKEN", token.as_str()),
        ("APP_NODE_NAME", "env-node"),
        ("APP_CA_FINGERPRINT", fingerprint.as_str()),
        ("APP_AGENT_IDENTITY_FILE", identity.to_str().unwrap()),
    ];

    let run = run_agent(&["--once"], &env).await;

    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.assert_no_secret();
    assert_eq!(
        cp.state.enroll_requests.lock().unwrap()[0].node_name,
        "env-node"
    );
    assert!(identity.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_environment_overrides_the_env_file() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    // The file points at a closed port; the environment at the control plane.
    let closed = closed_port().await;
    let env_file = node.env_file(closed, &token(&cp.ca.fingerprint()), &[]);
    let addr = cp.addr.to_string();

    let run = run_once(
        &env_file,
        &[
            ("APP_CONTROL_PLANE_ADDR", &addr),
            ("APP_NODE_NAME", "override"),
        ],
    )
    .await;

    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        cp.state.enroll_requests.lock().unwrap()[0].node_name,
        "override"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_once_the_agent_keeps_heartbeating_and_stops_cleanly_on_sigterm() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    let mut child = agent_command(&["--env-file", env_file.to_str().unwrap()], &[])
        .spawn()
        .unwrap();

    let state = cp.state.clone();
    eventually("three heartbeats", move || state.heartbeat_calls() >= 3).await;
    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();

    assert_eq!(status.code(), Some(0));
    assert_eq!(cp.state.enroll_calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_failure_is_retried_until_it_succeeds() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    *cp.state.heartbeat_reply.lock().unwrap() = Some(tonic::Status::unavailable("database busy"));
    let state = cp.state.clone();
    let heal = tokio::spawn(async move {
        eventually("a failed heartbeat", || state.heartbeat_calls() >= 2).await;
        *state.heartbeat_reply.lock().unwrap() = None;
    });

    let run = run_once(&env_file, &[]).await;

    heal.await.unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("heartbeat failed; retrying"),
        "{}",
        run.stderr
    );
    assert!(cp.state.heartbeat_calls() >= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_node_restarts_with_only_its_identity_file() {
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    assert_eq!(run_once(&env_file, &[]).await.code, Some(0));
    let identity = node.identity_path();

    let run = run_agent(
        &["--once"],
        &[("APP_AGENT_IDENTITY_FILE", identity.to_str().unwrap())],
    )
    .await;

    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(cp.state.enroll_calls(), 1);
    assert_eq!(cp.state.heartbeat_calls(), 2);
}
