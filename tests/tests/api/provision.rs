//! Provisioning end to end over the demo clouds (the Hetzner and DigitalOcean fakes run in
//! `levelrail serve --demo`): the CLI provisions, stages stream in order to `ready`, a real
//! agent process enrolls, the role reaches the node; cancel and delete clean up.
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use levelrail_proto::nodes::v1 as npb;
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use tonic::transport::Endpoint;

use crate::harness::{Bearer, ServerProcess, bin};

pub(crate) fn cli(server: &ServerProcess, args: &[&str]) -> Output {
    Command::new(bin("levelrail-cli"))
        .args(["--api-url", &server.url()])
        .args(args)
        .env("LEVELRAIL_TOKEN", server.admin_token())
        .stdin(Stdio::null())
        .output()
        .expect("levelrail-cli runs")
}

pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

pub(crate) async fn nodes(server: &ServerProcess) -> Vec<npb::Node> {
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

/// The status word of each watch line, in order, without repeats.
fn stages(out: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for line in out.lines() {
        if let Some(word) = line.split_whitespace().nth(1)
            && seen.last().map(String::as_str) != Some(word)
        {
            seen.push(word.to_owned());
        }
    }
    seen
}

pub(crate) async fn provision_to_ready(
    server: &Arc<ServerProcess>,
    provider: &str,
    region: &str,
    size: &str,
    name: &str,
    role: &str,
) {
    let s = server.clone();
    let args: Vec<String> = [
        "nodes",
        "provision",
        "--provider",
        provider,
        "--region",
        region,
        "--size",
        size,
        "--name",
        name,
        "--role",
        role,
        "--watch",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let out = blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&s, &refs)
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{provider}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = stages(
        &stdout
            .lines()
            .skip_while(|l| !l.contains("creating") || l.starts_with("provision"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    // The watch shows each change it sees, in order; changes a moment apart (the agent
    // enrolls within milliseconds of starting here) may reach it as one.
    let all = ["creating", "booting", "installing", "enrolling", "ready"];
    let mut expected = all.iter();
    assert!(
        got.iter().all(|s| expected.any(|e| e == s))
            && got.last().map(String::as_str) == Some("ready"),
        "{provider} stages out of order:\n{stdout}"
    );
    // The provision's record has every stage, in order.
    let id = stdout
        .split_whitespace()
        .find(|w| w.starts_with("npv_"))
        .expect("the provision id")
        .to_owned();
    let s = server.clone();
    let show = blocking(move || cli(&s, &["nodes", "provisions", "show", &id])).await;
    let shown = String::from_utf8_lossy(&show.stdout).into_owned();
    let positions: Vec<Option<usize>> = all
        .iter()
        .map(|stage| shown.find(&format!("  {stage} ")))
        .collect();
    assert!(
        positions.iter().all(Option::is_some) && positions.windows(2).all(|w| w[0] < w[1]),
        "{provider}: every stage is recorded in order:\n{shown}"
    );
}

#[tokio::test]
async fn provisions_on_both_demo_clouds_reach_ready_with_a_real_agent_and_the_role_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Arc::new(ServerProcess::start(
        &tmp.path().join("data"),
        "info",
        &["--demo"],
    ));
    provision_to_ready(&server, "hetzner", "fsn1", "cx22", "hz-build-1", "build").await;
    provision_to_ready(
        &server,
        "digitalocean",
        "nyc3",
        "s-1vcpu-1gb",
        "do-web-1",
        "general",
    )
    .await;

    let listed = nodes(&server).await;
    let kinds = |name: &str| {
        listed
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.workload_kinds.clone())
    };
    assert_eq!(
        kinds("hz-build-1"),
        Some(vec![npb::WorkloadKind::Builds as i32])
    );
    assert_eq!(
        kinds("do-web-1"),
        Some(vec![npb::WorkloadKind::Apps as i32])
    );

    // The name is now held by an enrolled node.
    let s = server.clone();
    let out = blocking(move || {
        cli(
            &s,
            &[
                "nodes",
                "provision",
                "--provider",
                "hetzner",
                "--region",
                "fsn1",
                "--size",
                "cx22",
                "--name",
                "hz-build-1",
            ],
        )
    })
    .await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ALREADY_EXISTS")
            || String::from_utf8_lossy(&out.stderr).contains("already"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Deleting with --destroy-server removes the VM through the provider.
    let id = listed
        .iter()
        .find(|n| n.name == "do-web-1")
        .unwrap()
        .id
        .clone();
    let s = server.clone();
    let out = blocking(move || cli(&s, &["nodes", "delete", &id, "--destroy-server"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(nodes(&server).await.iter().all(|n| n.name != "do-web-1"));
}

#[tokio::test]
async fn a_cancelled_provision_fails_with_its_reason_and_frees_the_name() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Arc::new(ServerProcess::start(
        &tmp.path().join("data"),
        "info",
        &["--demo"],
    ));
    let s = server.clone();
    let out = blocking(move || {
        cli(
            &s,
            &[
                "--json",
                "nodes",
                "provision",
                "--provider",
                "hetzner",
                "--region",
                "fsn1",
                "--size",
                "cx22",
                "--name",
                "cancel-me",
            ],
        )
    })
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = v["id"]
        .as_str()
        .or_else(|| v["provision"]["id"].as_str())
        .expect("provision id")
        .to_owned();
    let s = server.clone();
    let i = id.clone();
    let out = blocking(move || cli(&s, &["nodes", "provisions", "cancel", &i])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = server.clone();
    let i = id.clone();
    let out = blocking(move || cli(&s, &["nodes", "provisions", "watch", &i])).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a cancelled provision ends failed"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cancelled by operator"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The name is free again.
    provision_to_ready(&server, "hetzner", "fsn1", "cx22", "cancel-me", "general").await;
}
