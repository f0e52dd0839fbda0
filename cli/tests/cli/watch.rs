//! `nodes provisions watch`: one line per change, exit 0 on ready and 1 on failed, and
//! reconnecting after a broken stream without printing any change twice.
use levelrail_proto::provisioner::v1::ProvisionStatus;
use tonic::Status;

use crate::fake_provisioner::{HAPPY_LINES, Script, creating, happy_path, next};
use crate::helpers::{FakeSecrets, TestServer};

/// `nodes provisions watch npv_1` with a 1 ms reconnect backoff.
const WATCH: [&str; 6] = [
    "nodes",
    "provisions",
    "watch",
    "npv_1",
    "--reconnect-backoff",
    "1ms",
];

async fn server_playing(scripts: Vec<Script>) -> TestServer {
    let server = TestServer::start().await;
    server.provisioner().watch_scripts = scripts.into();
    server
}

fn ok(states: &[levelrail_proto::provisioner::v1::Provision]) -> Script {
    states.iter().cloned().map(Ok).collect()
}

fn lines(stdout: &str) -> Vec<&str> {
    stdout.lines().collect()
}

#[tokio::test]
async fn watch_prints_one_line_per_change_and_exits_0_when_ready() {
    // Arrange
    let server = server_playing(vec![ok(&happy_path("npv_1"))]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(lines(&out.stdout), HAPPY_LINES);
    assert_eq!(out.stderr, "");
    assert_eq!(server.provisioner().watch_requests, ["npv_1"]);
}

#[tokio::test]
async fn watch_exits_1_with_the_reason_on_stderr_when_the_provision_fails() {
    // Arrange
    let g1 = creating("npv_1", "web-1", 0);
    let g2 = next(&g1, ProvisionStatus::Booting, 4, |_| {});
    let g3 = next(&g2, ProvisionStatus::Failed, 31, |p| {
        p.failed_phase = ProvisionStatus::Booting as i32;
        p.failure_reason = "the provider reports this server errored".into();
        p.provider_error_code = "server_error".into();
    });
    let server = server_playing(vec![ok(&[g1, g2, g3])]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        lines(&out.stdout),
        [
            "03:04:05  creating",
            "03:04:09  booting  creating took 4s",
            "03:04:36  failed  booting took 27s  total 31s",
        ]
    );
    assert_eq!(
        out.stderr,
        "error: provision npv_1 failed in booting: the provider reports this server errored \
         (provider code server_error)\n"
    );
}

#[tokio::test]
async fn watch_of_a_provision_already_ready_prints_its_state_and_exits_0() {
    // Arrange
    let ready = happy_path("npv_1").pop().expect("ready");
    let server = server_playing(vec![ok(&[ready])]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "03:04:58  ready  ip 203.0.113.7  node node_1  creating took 4s  booting took 27s  \
         installing took 21s  enrolling took 1s  total 53s\n"
    );
}

#[tokio::test]
async fn a_stream_dropped_mid_way_is_reopened_and_no_change_is_printed_twice() {
    // Arrange: the first stream breaks after three changes; the second starts with the
    // current state again (generation 3), as the contract says.
    let states = happy_path("npv_1");
    let mut first = ok(&states[..3]);
    first.push(Err(Status::unavailable("connection reset")));
    let server = server_playing(vec![first, ok(&states[2..])]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(lines(&out.stdout), HAPPY_LINES);
    assert_eq!(
        out.stderr,
        "warning: the watch was interrupted (UNAVAILABLE: connection reset); reconnecting in \
         1ms (1/5)\n"
    );
    assert_eq!(server.provisioner().watch_requests, ["npv_1", "npv_1"]);
}

#[tokio::test]
async fn a_stream_that_ends_before_a_final_state_is_reopened_with_coalesced_changes() {
    // Arrange: the first stream ends OK after two changes; by the reconnect generations 3
    // and 4 were coalesced, so the second stream starts at generation 5.
    let states = happy_path("npv_1");
    let server = server_playing(vec![ok(&states[..2]), ok(&states[4..])]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        lines(&out.stdout),
        [
            HAPPY_LINES[0],
            HAPPY_LINES[1],
            "03:04:55  installing (agent started)  booting took 27s",
            HAPPY_LINES[5],
            HAPPY_LINES[6],
        ]
    );
    assert!(
        out.stderr
            .contains("(the stream ended before a final state); reconnecting"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn watch_gives_up_after_five_reconnects_without_progress() {
    // Arrange: every stream repeats the first state and breaks.
    let g1 = creating("npv_1", "web-1", 0);
    let broken = || vec![Ok(g1.clone()), Err(Status::unavailable("proxy timeout"))];
    let server = server_playing((0..8).map(|_| broken()).collect()).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "03:04:05  creating\n", "printed once");
    assert_eq!(
        server.provisioner().watch_requests.len(),
        6,
        "1 + 5 reconnects"
    );
    let last = out.stderr.lines().last().expect("an error line");
    assert_eq!(
        last,
        "error: lost the watch of provision npv_1 after 5 reconnects (UNAVAILABLE: proxy \
         timeout); follow again with: levelrail-cli nodes provisions watch npv_1"
    );
    assert_eq!(out.stderr.matches("warning: ").count(), 5);
}

#[tokio::test]
async fn a_stream_error_that_is_not_transient_ends_the_watch_at_once() {
    // Arrange
    let mut script = ok(&happy_path("npv_1")[..1]);
    script.push(Err(Status::permission_denied("the token may not watch")));
    let server = server_playing(vec![script]).await;

    // Act
    let out = server.run(&WATCH, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: PERMISSION_DENIED: the token may not watch\n"
    );
    assert_eq!(server.provisioner().watch_requests.len(), 1);
}

#[tokio::test]
async fn watch_json_prints_one_json_line_per_change() {
    // Arrange
    let states = happy_path("npv_1");
    let mut first = ok(&states[..4]);
    first.push(Err(Status::unavailable("reset")));
    let server = server_playing(vec![first, ok(&states[3..])]).await;

    // Act
    let mut argv = WATCH.to_vec();
    argv.push("--json");
    let out = server.run(&argv, FakeSecrets::none()).await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let docs: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON document per line"))
        .collect();
    let generations: Vec<u64> = docs
        .iter()
        .map(|d| d["provision"]["generation"].as_u64().expect("generation"))
        .collect();
    assert_eq!(generations, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(docs[3]["provision"]["install_step"], "agent_verified");
    assert_eq!(docs[6]["provision"]["status"], "ready");
}
