//! Prices never stand between an operator and a node: with a policy that refuses the AWS
//! Price List (`pricing:GetProducts`), `ListSizes` lists every size with "price
//! unavailable" and the reason, and a provision of one of them still boots (its user-data
//! run by the boot harness) and reaches `ready`.
use std::time::Duration;

use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::boot::{BootHarness, BootOptions};
use levelrail_sim::fakes::aws::{ACCESS_KEY_ID, FakeAws, FakeAwsConfig, SECRET_ACCESS_KEY};
use secrecy::SecretString;

use crate::harness::{Bearer, TestApp, set_endpoint, test_config, wait_finished};

#[tokio::test]
async fn a_refused_price_list_leaves_sizes_unpriced_and_a_node_still_reaches_ready() {
    let dir = tempfile::tempdir().unwrap();
    let harness = BootHarness::new(dir.path().join("nodes"), BootOptions::default());
    let aws = FakeAws::start(FakeAwsConfig {
        boot_hook: Some(harness.hook()),
        state_step: Duration::from_millis(300),
        denied_actions: vec!["GetProducts".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let mut cfg = test_config(&dir.path().join("data"));
    for key in ["ec2", "sts", "pricing"] {
        set_endpoint(&mut cfg, ProviderId::Aws, key, aws.endpoint());
    }
    let app = TestApp::start(cfg).await.expect("control plane starts");
    app.credentials
        .set_credential(CredentialInput::Aws {
            access_key_id: ACCESS_KEY_ID.into(),
            secret_access_key: SecretString::from(SECRET_ACCESS_KEY),
            session_token: SecretString::from(""),
            region: "eu-west-1".into(),
            role_arn: String::new(),
            use_ambient_credentials: false,
        })
        .await
        .unwrap();
    let mut client =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));

    let sizes = client
        .list_sizes(ppb::ListSizesRequest {
            provider: Provider::Aws as i32,
            region: "eu-west-1".into(),
        })
        .await
        .expect("the sizes are listed")
        .into_inner()
        .sizes;
    let micro = sizes
        .iter()
        .find(|s| s.id == "t3.micro")
        .expect("t3.micro listed");
    assert_eq!(
        (micro.price_monthly.as_str(), micro.price_basis.as_str()),
        ("", "")
    );
    assert!(
        micro.price_unavailable.contains("pricing:GetProducts"),
        "{micro:?}"
    );

    let created = client
        .provision(ppb::ProvisionRequest {
            provider: Provider::Aws as i32,
            region: "eu-west-1".into(),
            size: "t3.micro".into(),
            name: "unpriced-1".into(),
            ..Default::default()
        })
        .await
        .expect("provision accepted")
        .into_inner()
        .provision
        .unwrap();
    let done = wait_finished(
        &mut client,
        &created.id,
        "unpriced-1",
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(
        ppb::ProvisionStatus::try_from(done.status),
        Ok(ppb::ProvisionStatus::Ready),
        "{done:?}"
    );
}
