//! Fail-closed pinning against a man in the middle: the agent sends nothing to a server
//! whose chain does not lead to the pinned CA, and exits 3 without retrying.

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_another_ca_receives_zero_bytes_and_the_agent_exits_3() {
    // Arrange: the token pins the real CA; the server in the middle has its own.
    let real = TestCa::new("real control-plane CA");
    let attacker = TestCa::new("attacker CA");
    let mitm = Mitm::with_ca(&attacker).await;
    let node = Node::new();
    let env_file = node.env_file(mitm.addr, &token(&real.fingerprint()), &[]);

    // Act
    let run = run_once(&env_file, &[]).await;

    // Assert
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(
        run.last_line(),
        "levelrail-agent: control plane certificate does not match the pinned CA fingerprint; refusing to send the join token"
    );
    assert_eq!(
        mitm.connections.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one attempt, no retries"
    );
    assert_eq!(mitm.bytes.load(std::sync::atomic::Ordering::SeqCst), 0);
    run.assert_no_secret();
    assert!(!node.identity_path().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presenting_the_real_ca_certificate_beside_a_forged_leaf_does_not_help() {
    // The CA certificate is public; the attacker can send it but cannot sign with it.
    let real = TestCa::new("real control-plane CA");
    let attacker = TestCa::new("attacker CA");
    let (leaf, key) = attacker.server_leaf();
    let mitm = Mitm::start(vec![leaf, real.der(), attacker.der()], key).await;
    let node = Node::new();
    let env_file = node.env_file(mitm.addr, &token(&real.fingerprint()), &[]);

    let run = run_once(&env_file, &[]).await;

    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(mitm.bytes.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_node_refuses_a_server_with_another_ca_for_heartbeats() {
    // Arrange: enroll for real, then point the node at a man in the middle.
    let cp = FakeControlPlane::start().await;
    let node = Node::new();
    let env_file = node.env_file(cp.addr, &token(&cp.ca.fingerprint()), &[]);
    assert_eq!(run_once(&env_file, &[]).await.code, Some(0));
    let mitm = Mitm::with_ca(&TestCa::new("attacker CA")).await;
    let addr = mitm.addr.to_string();

    // Act
    let run = run_once(&env_file, &[("APP_CONTROL_PLANE_ADDR", &addr)]).await;

    // Assert
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.last_line().contains("refusing to connect"),
        "{}",
        run.last_line()
    );
    assert_eq!(mitm.bytes.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_pin_that_contradicts_the_token_exits_3_before_dialling() {
    let real = TestCa::new("real control-plane CA");
    let mitm = Mitm::with_ca(&real).await;
    let node = Node::new();
    let other = TestCa::new("other CA").fingerprint();
    let env_file = node.env_file(
        mitm.addr,
        &token(&real.fingerprint()),
        &[&format!("APP_CA_FINGERPRINT={other}")],
    );

    let run = run_once(&env_file, &[]).await;

    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.last_line().contains("APP_CA_FINGERPRINT"),
        "{}",
        run.last_line()
    );
    assert_eq!(
        mitm.connections.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recording_server_does_see_bytes_when_its_ca_is_the_pinned_one() {
    // Control for the tests above: with the right CA the same server receives the request
    // (and never answers, so the agent gives up with code 8 once the budget is spent).
    let real = TestCa::new("real control-plane CA");
    let server = Mitm::with_ca(&real).await;
    let node = Node::new();
    let env_file = node.env_file(
        server.addr,
        &token(&real.fingerprint()),
        &["APP_ENROLL_RETRY_SECONDS=1"],
    );

    let run = run_once(&env_file, &[]).await;

    assert_eq!(run.code, Some(8), "{}", run.stderr);
    assert!(server.bytes.load(std::sync::atomic::Ordering::SeqCst) > 0);
}
