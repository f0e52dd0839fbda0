//! DigitalOcean (API v2): regions, sizes with their USD monthly price, idempotent droplet
//! creation (a unique provision tag listed before any create), a cloud firewall with no
//! inbound rule, operator SSH keys, status mapping, cleanup and a probe that names each token
//! scope provisioning needs and the token lacks.
use std::sync::Arc;

use async_trait::async_trait;
use levelrail_types::PermissionCheck;
use secrecy::SecretString;
use tracing::instrument;

use super::cloud::{Cloud, Endpoint, bearer_spec};
use super::http::RetryPolicy;
use super::ratelimit::RateLimiter;
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, Price, Pricing,
    ProviderError, ProviderId, Reason, Region, ServerInfo, ServerState, Size,
};

mod cleanup;
mod client;
mod create;
mod errors;
mod keys;
mod names;
mod retry;
mod scopes;
mod wire;

pub use scopes::REQUIRED_SCOPES;

use client::Api;

/// The production API (the caller may override it, e.g. for a fake cloud).
pub const DEFAULT_BASE_URL: &str = "https://api.digitalocean.com/v2";

/// DigitalOcean in the table of clouds. Its error codes mean nothing beyond their kinds.
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::DigitalOcean,
    endpoints: &[Endpoint {
        key: "api",
        flag: "digitalocean-api-url",
        env: "LEVELRAIL_DIGITALOCEAN_API_URL",
        default: Some(DEFAULT_BASE_URL),
        help: "DigitalOcean API base URL (proxies, tests)",
    }],
    reason: |_| Reason::Unspecified,
    spec: |settings| {
        bearer_spec(
            ProviderId::DigitalOcean,
            settings,
            DigitalOceanProvider::new,
            RateLimiter::digitalocean,
        )
    },
};
/// The image used when a create does not name one.
pub const DEFAULT_IMAGE: &str = "ubuntu-24-04-x64";

/// DigitalOcean as seen with one API token.
#[derive(Debug)]
pub struct DigitalOceanProvider {
    api: Api,
    policy: RetryPolicy,
}

impl DigitalOceanProvider {
    /// A client of the API at `base_url` (`DEFAULT_BASE_URL` in production) using `token`,
    /// sharing `limiter` with every other client of the same token
    /// (`RateLimiter::digitalocean()`).
    pub fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        let api = Api::new(base_url, token, limiter, policy.clone())?;
        Ok(Self { api, policy })
    }
}

#[async_trait]
impl CloudProvider for DigitalOceanProvider {
    fn id(&self) -> ProviderId {
        ProviderId::DigitalOcean
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        let regions = self.api.regions().await?;
        Ok(regions
            .into_iter()
            .filter(|r| r.available)
            .map(|r| Region {
                id: r.slug,
                name: r.name,
            })
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        let sizes = self.api.sizes().await?;
        Ok(sizes
            .into_iter()
            .filter(|s| s.available && s.regions.iter().any(|r| r == region))
            .map(|s| Size {
                // Every size of this catalog is x86-64.
                architecture: levelrail_types::CpuArch::X86_64,
                unavailable_reason: None,
                name: if s.description.is_empty() {
                    s.slug.clone()
                } else {
                    format!("{} {}", s.description, s.slug)
                },
                id: s.slug,
                vcpus: s.vcpus,
                memory_mb: u32::try_from(s.memory).unwrap_or(u32::MAX),
                disk_gb: s.disk,
                pricing: Pricing::Known(Price::monthly(format!("{:.2}", s.price_monthly), "USD")),
            })
            .collect())
    }

    #[instrument(skip_all, fields(provision = %req.ownership.provision_id, region = %req.region, size = %req.size))]
    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        let droplet = create::create_droplet(&self.api, &self.policy, req).await?;
        Ok(server_info(droplet))
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        // Droplet ids are numbers; anything else cannot exist (and is never put in a path).
        let id: u64 = id.parse().map_err(|_| {
            ProviderError::new(
                ProviderId::DigitalOcean,
                ErrorKind::NotFound,
                "not_found",
                "no droplet has this id",
            )
        })?;
        Ok(server_info(self.api.droplet(id).await?))
    }

    #[instrument(skip_all, fields(droplet = server.unwrap_or("-"), provision = %ownership.provision_id))]
    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        cleanup::delete_provision(&self.api, &self.policy, server, ownership).await
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let tag = names::control_plane_tag(control_plane)?;
        Ok(self
            .api
            .droplets_tagged(&tag)
            .await?
            .into_iter()
            .map(server_info)
            .collect())
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        let account = match self.api.account().await {
            Ok(a) => Some(a),
            Err(e) if e.status == Some(403) => None,
            Err(e) => return Err(e),
        };
        let missing = scopes::missing_scopes(&self.api, account.is_some()).await?;
        Ok(report(account.as_ref(), &missing))
    }
}

/// The probe's verdict: the account (unknown without `account:read`), whether it is locked,
/// and each scope the token lacks.
fn report(account: Option<&wire::Account>, missing: &[&str]) -> CapabilityReport {
    let owner = match account {
        Some(a) => match &a.team {
            Some(team) if !team.name.is_empty() => format!("team {} ({})", team.name, team.uuid),
            _ => format!("{} ({})", a.email, a.uuid),
        },
        None => "unknown account".to_owned(),
    };
    let locked = account.is_some_and(|a| a.status == "locked");
    let message = if locked {
        format!("DigitalOcean account {owner} is locked: no droplet can be created")
    } else if missing.is_empty() {
        format!(
            "DigitalOcean account {owner}: the token holds every scope provisioning uses ({} checked)",
            REQUIRED_SCOPES.len()
        )
    } else {
        format!(
            "DigitalOcean account {owner}: the token lacks {} of the scopes provisioning uses: {}; create a token with full access, or with custom scopes including these",
            missing.len(),
            missing.join(", ")
        )
    };
    CapabilityReport {
        can_write: missing.is_empty() && !locked,
        account: owner,
        message,
        permissions: PermissionCheck::of(REQUIRED_SCOPES, missing),
    }
}

/// A droplet as a `ServerInfo`: `new` → pending, `active` → running, `off` / `archive` →
/// failed; the address is the first public IPv4.
fn server_info(d: wire::Droplet) -> ServerInfo {
    let state = match d.status.as_str() {
        "active" => ServerState::Running,
        "off" | "archive" => ServerState::Failed,
        _ => ServerState::Pending,
    };
    ServerInfo {
        id: d.id.to_string(),
        ipv4: d
            .networks
            .v4
            .iter()
            .find(|n| n.kind == "public")
            .map(|n| n.ip_address.clone()),
        provision_id: names::provision_from_tags(&d.tags),
        name: d.name,
        state,
        provider_state: d.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn droplet(status: &str) -> wire::Droplet {
        serde_json::from_value(serde_json::json!({
            "id": 42, "name": "web-1", "status": status,
            "networks": {"v4": [
                {"ip_address": "10.0.0.2", "type": "private"},
                {"ip_address": "203.0.113.9", "type": "public"}
            ]},
            "tags": ["levelrail", "levelrail-provision-npv_7"]
        }))
        .unwrap()
    }

    #[test]
    fn droplet_states_map_to_server_states() {
        for (status, want) in [
            ("new", ServerState::Pending),
            ("active", ServerState::Running),
            ("off", ServerState::Failed),
            ("archive", ServerState::Failed),
        ] {
            let info = server_info(droplet(status));
            assert_eq!((info.state, info.provider_state.as_str()), (want, status));
        }
        let info = server_info(droplet("active"));
        assert_eq!(info.ipv4.as_deref(), Some("203.0.113.9"));
        assert_eq!(info.provision_id.as_deref(), Some("npv_7"));
        assert_eq!(info.id, "42");
    }
}
