//! Enrollment end to end: `levelrail serve`, a join token minted with the CLI, the real
//! `levelrail-agent` binary with an env file.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use levelrail_proto::nodes::v1 as npb;
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use tonic::transport::Endpoint;

use crate::harness::{Bearer, ServerProcess, bin};

fn cli(server: &ServerProcess, args: &[&str]) -> Output {
    Command::new(bin("levelrail-cli"))
        .args(["--api-url", &server.url()])
        .args(args)
        .env("LEVELRAIL_TOKEN", server.admin_token())
        .stdin(Stdio::null())
        .output()
        .expect("levelrail-cli runs")
}

fn mint(server: &ServerProcess, extra: &[&str]) -> String {
    let mut args = vec!["nodes", "join-tokens", "create", "-q"];
    args.extend_from_slice(extra);
    let out = cli(server, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Writes the env file a cloud-init would, with the token passed by file.
fn env_file(dir: &Path, server: &ServerProcess, name: &str, token: &str) -> PathBuf {
    let token_file = dir.join(format!("{name}.token"));
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let env = dir.join(format!("{name}.env"));
    std::fs::write(
        &env,
        format!(
            "# written by cloud-init\nAPP_CONTROL_PLANE_ADDR={}\nAPP_JOIN_TOKEN_FILE={}\nAPP_NODE_NAME={name}\nAPP_AGENT_IDENTITY_FILE={}\nAPP_ENROLL_RETRY_SECONDS=5\n",
            server.agent_addr,
            token_file.display(),
            dir.join(format!("{name}-data/identity.json")).display()
        ),
    )
    .unwrap();
    env
}

fn agent_once(env: &Path) -> Output {
    Command::new(bin("levelrail-agent"))
        .arg("--env-file")
        .arg(env)
        .arg("--once")
        .env_remove("APP_JOIN_TOKEN")
        .env_remove("APP_CONTROL_PLANE_ADDR")
        .env_remove("APP_NODE_NAME")
        .stdin(Stdio::null())
        .output()
        .expect("levelrail-agent runs")
}

async fn nodes(server: &ServerProcess) -> Vec<npb::Node> {
    let ch = Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    NodesServiceClient::with_interceptor(ch, Bearer(server.admin_token()))
        .list_nodes(npb::ListNodesRequest::default())
        .await
        .unwrap()
        .into_inner()
        .nodes
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test]
async fn an_agent_enrolls_heartbeats_and_restarts_without_enrolling_again() {
    let tmp = tempfile::tempdir().unwrap();
    let server = std::sync::Arc::new(ServerProcess::start(&tmp.path().join("data"), "info", &[]));
    let s = server.clone();
    let token = blocking(move || mint(&s, &["--node-name", "web-1"])).await;
    assert!(token.starts_with("LR1."), "a full join token on stdout");
    let env = env_file(tmp.path(), &server, "web-1", &token);

    let e = env.clone();
    let out = blocking(move || agent_once(&e)).await;
    assert!(
        out.status.success(),
        "agent: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = nodes(&server).await;
    assert_eq!(listed.len(), 1);
    let first = listed[0].clone();
    assert_eq!(first.name, "web-1");
    assert_eq!(first.workload_kinds, vec![npb::WorkloadKind::Apps as i32]);
    let seen1 = first.last_seen_at.expect("last seen after the heartbeat");

    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let e = env.clone();
    let out = blocking(move || agent_once(&e)).await;
    assert!(
        out.status.success(),
        "restart: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = nodes(&server).await;
    assert_eq!(listed.len(), 1, "a restarted agent creates no second node");
    let seen2 = listed[0].last_seen_at.unwrap();
    assert!(
        (seen2.seconds, seen2.nanos) > (seen1.seconds, seen1.nanos),
        "heartbeats move last-seen"
    );
}

#[tokio::test]
async fn used_expired_revoked_and_wrong_name_tokens_are_refused_and_logged_by_id_only() {
    let tmp = tempfile::tempdir().unwrap();
    let server = std::sync::Arc::new(ServerProcess::start(&tmp.path().join("data"), "trace", &[]));
    let s = server.clone();
    let (used, expired, revoked, wrong) = blocking(move || {
        let used = mint(&s, &["--node-name", "a-1"]);
        let expired = mint(&s, &["--ttl", "1s"]);
        let revoked = mint(&s, &[]);
        let wrong = mint(&s, &["--node-name", "b-1"]);
        let revoked_id = revoked.split('.').nth(2).unwrap().to_owned();
        let out = cli(&s, &["nodes", "join-tokens", "revoke", &revoked_id]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (used, expired, revoked, wrong)
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;

    let cases = [
        ("a-1", used.clone(), 0),
        ("a-2", used.clone(), 5),
        ("a-3", expired.clone(), 4),
        ("a-4", revoked.clone(), 6),
        ("a-5", wrong.clone(), 7),
    ];
    for (name, token, code) in cases {
        let env = env_file(tmp.path(), &server, name, &token);
        let out = blocking(move || agent_once(&env)).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{name}: {stderr}");
        let secret = token.rsplit('.').next().unwrap();
        assert!(
            !stderr.contains(secret),
            "{name}: the agent printed the token secret"
        );
    }
    let log_path = server.log_path.clone();
    let server = std::sync::Arc::try_unwrap(server).expect("sole owner");
    server.stop().unwrap();
    let log = std::fs::read_to_string(log_path).unwrap();
    for token in [&used, &expired, &revoked, &wrong] {
        let mut parts = token.split('.');
        let id = parts.nth(2).unwrap();
        let secret = parts.next().unwrap();
        assert!(!log.contains(secret), "token secret in the server log");
        if token != &used {
            assert!(log.contains(id), "refusal of {id} is logged by token id");
        }
    }
}
