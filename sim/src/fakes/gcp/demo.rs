//! The demo Google cloud (OAuth, STS, IAM Credentials, Resource Manager and Compute): an
//! instance state every 2 s, and the service-account key of its configuration.
use std::time::Duration;

use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{JsonDocument, Provider, SetCredentialRequest};
use levelrail_types::ProviderId;

use super::{FakeGcp, FakeGcpConfig};
use crate::fakes::demo::{DemoCloud, DemoOptions};

/// Starts the demo Google cloud.
pub(crate) async fn start_demo(options: &DemoOptions) -> std::io::Result<DemoCloud> {
    let defaults = FakeGcpConfig::default();
    let fake = FakeGcp::start(FakeGcpConfig {
        boot_hook: Some(options.boot_hook.clone()),
        state_step: Duration::from_secs(2),
        token_lifetime: options.token_lifetime.unwrap_or(defaults.token_lifetime),
        full_regions: options.full_regions.clone(),
        ..defaults
    })
    .await?;
    Ok(DemoCloud {
        id: ProviderId::Gcp,
        urls: vec![
            ("token", fake.token_url()),
            ("sts", fake.sts_url()),
            ("iam-credentials", fake.iam_credentials_url()),
            ("compute", fake.compute_url()),
            ("resource-manager", fake.resource_manager_url()),
            ("billing", fake.billing_url()),
        ],
        ca_pem: None,
        credential: SetCredentialRequest {
            provider: Provider::Gcp.into(),
            credential: Some(Credential::Gcp(JsonDocument {
                json: fake.service_account_key_json(),
                ..JsonDocument::default()
            })),
        },
        handle: Box::new(fake),
    })
}
