//! The demo AWS cloud (EC2 and STS on one endpoint): an instance state every 2 s, and a
//! long-term access key that only this cloud accepts.
use std::time::Duration;

use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{AwsCredential, Provider, SetCredentialRequest};
use levelrail_types::ProviderId;

use super::{FakeAws, FakeAwsConfig};
use crate::fakes::demo::{DemoCloud, DemoOptions};

/// The demo access key (a long-term key's shape).
const KEY_ID: &str = "AKIALEVELRAILDEMO0001";
const SECRET: &str = "levelrail/demo/secret/access/key/0000000000";

/// Starts the demo AWS cloud.
pub(crate) async fn start_demo(options: &DemoOptions) -> std::io::Result<DemoCloud> {
    let fake = FakeAws::start(FakeAwsConfig {
        access_keys: vec![(KEY_ID.into(), SECRET.into())],
        boot_hook: Some(options.boot_hook.clone()),
        state_step: Duration::from_secs(2),
        session_lifetime: options.token_lifetime,
        full_regions: options.full_regions.clone(),
        ..Default::default()
    })
    .await?;
    Ok(DemoCloud {
        id: ProviderId::Aws,
        urls: vec![
            ("ec2", fake.endpoint()),
            ("sts", fake.endpoint()),
            ("pricing", fake.endpoint()),
        ],
        ca_pem: None,
        credential: SetCredentialRequest {
            provider: Provider::Aws.into(),
            credential: Some(Credential::Aws(AwsCredential {
                access_key_id: KEY_ID.into(),
                secret_access_key: SECRET.into(),
                region: "us-east-1".into(),
                ..AwsCredential::default()
            })),
        },
        handle: Box::new(fake),
    })
}
