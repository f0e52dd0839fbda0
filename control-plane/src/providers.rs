//! The provider clients this control plane offers, with their endpoints (overridable per
//! provider for proxies, sovereign clouds, tests and demo mode).
use std::sync::Arc;

use levelrail_provisioner::providers::digitalocean::DigitalOceanProvider;
use levelrail_provisioner::providers::hetzner::HetznerProvider;
use levelrail_provisioner::providers::ratelimit::RateLimiter;
use levelrail_provisioner::providers::registry::{
    AccessBroker, ClientParts, ProviderRegistry, ProviderSpec,
};
use levelrail_provisioner::providers::{CloudProvider, ProviderId};

/// Where each provider's API lives.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Hetzner Cloud API base (`…/v1`).
    pub hetzner: String,
    /// DigitalOcean API base (`…/v2`).
    pub digitalocean: String,
}

impl Default for Endpoints {
    fn default() -> Self {
        Self {
            hetzner: "https://api.hetzner.cloud/v1".into(),
            digitalocean: "https://api.digitalocean.com/v2".into(),
        }
    }
}

/// The registry of every provider with a client in this build.
pub fn registry(broker: Arc<dyn AccessBroker>, endpoints: &Endpoints) -> ProviderRegistry {
    ProviderRegistry::new(broker)
        .with(
            ProviderId::Hetzner,
            ProviderSpec {
                base_url: endpoints.hetzner.clone(),
                construct: Arc::new(|p: ClientParts<'_>| {
                    let client = HetznerProvider::new(p.base_url, p.token, p.limiter, p.policy)?;
                    Ok(Arc::new(client) as Arc<dyn CloudProvider>)
                }),
                limiter: RateLimiter::hetzner,
            },
        )
        .with(
            ProviderId::DigitalOcean,
            ProviderSpec {
                base_url: endpoints.digitalocean.clone(),
                construct: Arc::new(|p: ClientParts<'_>| {
                    let client =
                        DigitalOceanProvider::new(p.base_url, p.token, p.limiter, p.policy)?;
                    Ok(Arc::new(client) as Arc<dyn CloudProvider>)
                }),
                limiter: RateLimiter::digitalocean,
            },
        )
}
