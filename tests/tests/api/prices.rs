//! Prices never stand between an operator and a node: with a policy that refuses the AWS
//! Price List (`pricing:GetProducts`), `ListSizes` lists every size with "price
//! unavailable" and the reason, and a provision of one of them still boots (its user-data
//! run by the boot harness) and reaches `ready`; with a Price List that does not answer, a
//! provision is accepted at once (it never reads prices) and the size list waits ten
//! seconds at most.
use std::time::{Duration, Instant};

use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::boot::{BootHarness, BootOptions};
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::aws::{
    ACCESS_KEY_ID, FakeAws, FakeAwsConfig, FakeAwsHandle, SECRET_ACCESS_KEY,
};
use secrecy::SecretString;

use crate::harness::{Bearer, TestApp, set_endpoint, test_config, wait_finished};

type Client = ProvisionerServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
>;

/// A control plane with an AWS credential, the fake EC2, STS and Price List of `tune`
/// booting its instances through the boot harness, and a provisioner client.
async fn aws_plane(
    tune: impl FnOnce(&mut FakeAwsConfig),
) -> (TestApp, FakeAwsHandle, Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let harness = BootHarness::new(dir.path().join("nodes"), BootOptions::default());
    let mut config = FakeAwsConfig {
        boot_hook: Some(harness.hook()),
        state_step: Duration::from_millis(300),
        ..Default::default()
    };
    tune(&mut config);
    let aws = FakeAws::start(config).await.unwrap();
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
    let client =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));
    (app, aws, client, dir)
}

fn request(name: &str) -> ppb::ProvisionRequest {
    ppb::ProvisionRequest {
        provider: Provider::Aws as i32,
        region: "eu-west-1".into(),
        size: "t3.micro".into(),
        name: name.into(),
        ..Default::default()
    }
}

/// The AWS sizes of eu-west-1, as `ListSizes` answers.
async fn sizes(client: &mut Client) -> Vec<ppb::Size> {
    client
        .list_sizes(ppb::ListSizesRequest {
            provider: Provider::Aws as i32,
            region: "eu-west-1".into(),
        })
        .await
        .expect("the sizes are listed")
        .into_inner()
        .sizes
}

#[tokio::test]
async fn a_refused_price_list_leaves_sizes_unpriced_and_a_node_still_reaches_ready() {
    let (_app, _aws, mut client, _dir) =
        aws_plane(|c| c.denied_actions = vec!["GetProducts".into()]).await;

    let sizes = sizes(&mut client).await;
    let micro = sizes
        .iter()
        .find(|s| s.id == "t3.micro")
        .expect("t3.micro listed");
    assert_eq!(
        (micro.price_monthly.as_str(), micro.price_basis.as_str()),
        ("", "")
    );
    assert!(
        micro.price_unavailable.contains("(AccessDeniedException)"),
        "{micro:?}"
    );

    let created = client
        .provision(request("unpriced-1"))
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

#[tokio::test]
async fn a_silent_price_list_holds_no_provision_and_the_size_list_ten_seconds_at_most() {
    let (_app, aws, mut client, _dir) = aws_plane(|_| {}).await;
    aws.faults().inject(
        Some("POST"),
        "/GetProducts",
        100,
        Fault::Delay(Duration::from_secs(120)),
    );

    // On an empty catalog: a provision reads the sizes, never their prices.
    let asked = Instant::now();
    client
        .provision(request("silent-1"))
        .await
        .expect("provision accepted");
    assert!(
        asked.elapsed() < Duration::from_secs(30),
        "the provision waited {:?} on the Price List",
        asked.elapsed()
    );

    let asked = Instant::now();
    let sizes = sizes(&mut client).await;
    assert!(
        asked.elapsed() < Duration::from_secs(30),
        "the size list waited {:?}",
        asked.elapsed()
    );
    assert!(
        sizes
            .iter()
            .all(|s| s.price_monthly.is_empty() && s.price_unavailable.contains("within 10 s")),
        "{sizes:?}"
    );
}
