//! The demo Hetzner cloud: a server state every 2 s, and a token of Hetzner's shape that
//! only this cloud accepts.
use std::time::Duration;

use levelrail_types::ProviderId;

use super::{FakeHetzner, FakeHetznerConfig};
use crate::fakes::demo::{DemoCloud, DemoOptions, api_token};

/// The demo token (64 alphanumerics).
const TOKEN: &str = "demo0000000000000000000000000000000000000000000000000000000hcloud";

/// Starts the demo Hetzner cloud.
pub(crate) async fn start_demo(options: &DemoOptions) -> std::io::Result<DemoCloud> {
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        boot_hook: Some(options.boot_hook.clone()),
        state_step: Duration::from_secs(2),
        full_regions: options.full_regions.clone(),
        ..Default::default()
    })
    .await?;
    Ok(DemoCloud {
        id: ProviderId::Hetzner,
        urls: vec![("api", fake.base_url())],
        ca_pem: None,
        credential: api_token(ProviderId::Hetzner, TOKEN),
        handle: Box::new(fake),
    })
}
