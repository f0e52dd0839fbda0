//! AWS end to end in demo mode: `levelrail serve --demo` also runs the fake EC2 + STS with
//! a demo access key; the credentials service exchanges it at the fake STS for a session,
//! the provisioner launches on the fake EC2, the simulated boot starts a real agent, and
//! the node reaches `ready`; deleting it with `--destroy-server` terminates the instance.
use std::sync::Arc;

use levelrail_proto::nodes::v1 as npb;

use crate::harness::ServerProcess;
use crate::provision::{blocking, cli, nodes, provision_to_ready};

#[tokio::test]
async fn a_provision_on_the_demo_aws_cloud_reaches_ready_with_a_real_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Arc::new(ServerProcess::start(
        &tmp.path().join("data"),
        "info",
        &["--demo"],
    ));
    let s = server.clone();
    let listed = blocking(move || cli(&s, &["nodes", "providers", "list"])).await;
    let providers = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        providers
            .lines()
            .any(|l| l.starts_with("aws") && !l.contains("not connected")),
        "{providers}"
    );

    let s = server.clone();
    let verified =
        blocking(move || cli(&s, &["nodes", "providers", "verify", "--provider", "aws"])).await;
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    assert!(verified.status.success(), "{out}");
    assert!(
        out.contains("123456789012"),
        "the account is recorded: {out}"
    );

    provision_to_ready(
        &server,
        "aws",
        "us-east-1",
        "t3.micro",
        "aws-web-1",
        "general",
    )
    .await;
    let listed = nodes(&server).await;
    let node = listed
        .iter()
        .find(|n| n.name == "aws-web-1")
        .expect("enrolled");
    assert_eq!(node.workload_kinds, vec![npb::WorkloadKind::Apps as i32]);

    let id = node.id.clone();
    let s = server.clone();
    let out = blocking(move || cli(&s, &["nodes", "delete", &id, "--destroy-server"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(nodes(&server).await.iter().all(|n| n.name != "aws-web-1"));
}
