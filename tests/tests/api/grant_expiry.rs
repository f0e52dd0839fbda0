//! Grants that expire in the middle of a provision, on the three clouds with token
//! exchanges: the demo clouds issue Azure AD tokens, Google access tokens and AWS STS
//! sessions that live 3 s and refuse them afterwards as the real APIs do (401
//! `ExpiredAuthenticationToken`, 401 `authError`, `RequestExpired`). A provision that
//! outlives many grants still reaches `ready`, and one that fails after its grant expired
//! still deletes its server.
use std::time::Duration;

use levelrail_clouds::ProviderId;
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;

use crate::harness::{TestApp, test_config};

/// How long every demo grant lives.
const GRANT_LIFE: &str = "3s";

async fn demo_app(tmp: &std::path::Path) -> TestApp {
    let mut cfg = test_config(&tmp.join("data"));
    cfg.demo = true;
    cfg.demo_token_lifetime = Some(GRANT_LIFE.into());
    TestApp::start(cfg).await.expect("control plane starts")
}

async fn run(provider: Provider, id: ProviderId, region: &str, size: &str, prefix: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let app = demo_app(tmp.path()).await;
    let mut client = app.provisioner_client().await;

    // A provision that takes several grant lifetimes reaches ready.
    let name = format!("{prefix}-ready");
    let ready = app.provision(provider, region, size, &name).await;
    let ready =
        crate::harness::wait_finished(&mut client, &ready, &name, Duration::from_secs(120)).await;
    assert_eq!(
        ppb::ProvisionStatus::try_from(ready.status),
        Ok(ppb::ProvisionStatus::Ready),
        "{name}: {ready:?}"
    );

    app.stop().await;

    // One that fails after its grant expired (its nodes cannot reach the control plane,
    // so it times out) still deletes its server.
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&tmp.path().join("data"));
    cfg.demo = true;
    cfg.demo_token_lifetime = Some(GRANT_LIFE.into());
    cfg.front.nodes.agent_advertise = Some("127.0.0.1:9".into());
    cfg.front.nodes.provision_timeout = Some("8s".into());
    let app = TestApp::start(cfg).await.expect("control plane starts");
    let mut client = app.provisioner_client().await;
    let name = format!("{prefix}-late");
    let late = app.provision(provider, region, size, &name).await;
    let failed =
        crate::harness::wait_finished(&mut client, &late, &name, Duration::from_secs(120)).await;
    let reason = failed.failure_reason.clone();
    assert!(
        reason.starts_with("timed out after 8s") && !reason.contains("cleanup incomplete"),
        "{name}: {reason}"
    );
    let control_plane = std::fs::read_to_string(app.data_dir.join("control-plane.id")).unwrap();
    let (cloud, _) = app
        .registry
        .client(id, "test inspection")
        .await
        .expect("client");
    let left: Vec<_> = cloud
        .list_servers(control_plane.trim())
        .await
        .expect("list")
        .into_iter()
        .filter(|s| s.provision_id.as_deref() == Some(late.as_str()))
        // EC2 keeps listing a terminated instance while it shuts down.
        .filter(|s| !matches!(s.provider_state.as_str(), "shutting-down" | "terminated"))
        .collect();
    assert!(
        left.is_empty(),
        "{name}: servers left at the provider: {left:?}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_grants_that_expire_mid_saga_still_reach_ready_and_clean_up() {
    run(
        Provider::Azure,
        ProviderId::Azure,
        "westeurope",
        "Standard_B2s",
        "az-exp",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_grants_that_expire_mid_saga_still_reach_ready_and_clean_up() {
    run(
        Provider::Gcp,
        ProviderId::Gcp,
        "us-central1-a",
        "e2-small",
        "gcp-exp",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_sessions_that_expire_mid_saga_still_reach_ready_and_clean_up() {
    run(
        Provider::Aws,
        ProviderId::Aws,
        "us-east-1",
        "t3.small",
        "aws-exp",
    )
    .await;
}
