//! The demo clouds (`levelrail serve --demo`): every simulated cloud, started at a demo
//! pace, each with a credential it accepts and the endpoints the clients should use. What a
//! cloud's demo looks like lives with its fake (`fakes::<cloud>::demo`); [`start`] is the
//! one table of them.
use levelrail_types::ProviderId;

pub use crate::fakes::demo::{DemoCloud, DemoOptions};
use crate::fakes::{aws, azure, digitalocean, gcp, hetzner};

/// Starts the demo cloud of `id`.
pub async fn start(id: ProviderId, options: &DemoOptions) -> std::io::Result<DemoCloud> {
    match id {
        ProviderId::Hetzner => hetzner::start_demo(options).await,
        ProviderId::DigitalOcean => digitalocean::start_demo(options).await,
        ProviderId::Aws => aws::start_demo(options).await,
        ProviderId::Azure => azure::start_demo(options).await,
        ProviderId::Gcp => gcp::start_demo(options).await,
    }
}
