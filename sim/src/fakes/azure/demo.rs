//! The demo Azure cloud (AAD and ARM, over HTTPS with its own CA): a VM state every 2 s,
//! and the service principal of its configuration.
use std::time::Duration;

use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{JsonDocument, Provider, SetCredentialRequest};
use levelrail_types::ProviderId;

use super::{FakeAzure, FakeAzureConfig};
use crate::fakes::demo::{DemoCloud, DemoOptions};

/// Starts the demo Azure cloud.
pub(crate) async fn start_demo(options: &DemoOptions) -> std::io::Result<DemoCloud> {
    let defaults = FakeAzureConfig::default();
    let fake = FakeAzure::start(FakeAzureConfig {
        boot_hook: Some(options.boot_hook.clone()),
        state_step: Duration::from_secs(2),
        token_lifetime: options.token_lifetime.unwrap_or(defaults.token_lifetime),
        full_regions: options.full_regions.clone(),
        ..defaults
    })
    .await?;
    let c = fake.config();
    let principal = serde_json::json!({
        "tenant_id": c.tenant_id, "client_id": c.client_id, "client_secret": c.client_secret,
        "subscription_id": c.subscription_id, "resource_group": c.resource_groups[0],
    });
    Ok(DemoCloud {
        id: ProviderId::Azure,
        urls: vec![
            ("authority", fake.authority_url()),
            ("arm", fake.base_url()),
            ("prices", fake.prices_url()),
        ],
        ca_pem: Some(fake.ca_pem().to_owned()),
        credential: SetCredentialRequest {
            provider: Provider::Azure.into(),
            credential: Some(Credential::Azure(JsonDocument {
                json: principal.to_string(),
                ..JsonDocument::default()
            })),
        },
        handle: Box::new(fake),
    })
}
