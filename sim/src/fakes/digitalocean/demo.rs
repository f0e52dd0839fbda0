//! The demo DigitalOcean cloud: a droplet state every 3 s, and a personal access token of
//! DigitalOcean's shape that only this cloud accepts.
use std::time::Duration;

use levelrail_types::ProviderId;

use super::{FakeDigitalOcean, FakeDigitalOceanConfig};
use crate::fakes::demo::{DemoCloud, DemoOptions, api_token};

/// The demo token.
const TOKEN: &str = "dop_v1_00000000000000000000000000000000000000000000000000000000000de770";

/// Starts the demo DigitalOcean cloud.
pub(crate) async fn start_demo(options: &DemoOptions) -> std::io::Result<DemoCloud> {
    let fake = FakeDigitalOcean::start(FakeDigitalOceanConfig {
        token: TOKEN.into(),
        boot_hook: Some(options.boot_hook.clone()),
        state_step: Duration::from_secs(3),
        full_regions: options.full_regions.clone(),
        ..Default::default()
    })
    .await?;
    Ok(DemoCloud {
        id: ProviderId::DigitalOcean,
        urls: vec![("api", fake.base_url())],
        ca_pem: None,
        credential: api_token(ProviderId::DigitalOcean, TOKEN),
        handle: Box::new(fake),
    })
}
