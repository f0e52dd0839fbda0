//! Azure and GCP end to end over their demo clouds: verification through the token
//! exchange, a provision to `ready` with a real agent, and deletion of the VM.
use std::sync::Arc;

use crate::harness::ServerProcess;
use crate::provision::provision_to_ready;

async fn run(provider: &'static str, region: &'static str, size: &'static str, name: &'static str) {
    let tmp = tempfile::tempdir().unwrap();
    let server = Arc::new(ServerProcess::start(
        &tmp.path().join("data"),
        "info",
        &["--demo"],
    ));
    let s = server.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::harness::bin("levelrail-cli"))
            .args([
                "--api-url",
                &s.url(),
                "nodes",
                "providers",
                "verify",
                "--provider",
                provider,
            ])
            .env("LEVELRAIL_TOKEN", s.admin_token())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{provider} verify: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    provision_to_ready(&server, provider, region, size, name, "general").await;
}

#[tokio::test]
async fn a_provision_on_the_demo_azure_cloud_reaches_ready_with_a_real_agent() {
    run("azure", "westeurope", "Standard_B2s", "az-web-1").await;
}

#[tokio::test]
async fn a_provision_on_the_demo_gcp_cloud_reaches_ready_with_a_real_agent() {
    run("gcp", "us-central1-a", "e2-small", "gcp-web-1").await;
}
