//! Hetzner Cloud (API v1): locations, server types with the selected location's gross
//! monthly EUR price, idempotent server creation (unique name + label lookup, adopting the
//! server a lost answer created), a dedicated firewall with no inbound rule, uploaded SSH
//! keys (so no root password is e-mailed), deletion of the server and what was created for
//! it, listing by label, and a write-capability probe that creates nothing billable.
use std::sync::Arc;

use levelrail_types::{CpuArch, PermissionCheck};

use async_trait::async_trait;
use secrecy::SecretString;

use super::cloud::{Cloud, Endpoint, bearer_spec};
use super::http::RetryPolicy;
use super::ratelimit::RateLimiter;
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, PollTarget, Price,
    Pricing, ProviderError, ProviderId, Reason, Region, ServerInfo, ServerState, Size,
};

mod client;
mod create;
mod delete;
mod errors;
mod labels;
mod wire;

use client::Client;

/// The public API endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.hetzner.cloud/v1";

/// Hetzner Cloud in the table of clouds.
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::Hetzner,
    endpoints: &[Endpoint {
        key: "api",
        flag: "hetzner-api-url",
        env: "LEVELRAIL_HETZNER_API_URL",
        default: Some(DEFAULT_BASE_URL),
        help: "Hetzner Cloud API base URL (proxies, tests)",
    }],
    reason: errors::reason,
    spec: |settings| {
        bearer_spec(
            ProviderId::Hetzner,
            settings,
            HetznerProvider::new,
            RateLimiter::hetzner,
        )
    },
};
/// The image used when a create names none.
pub const DEFAULT_IMAGE: &str = "ubuntu-24.04";
/// What a Hetzner token belongs to: the API has no endpoint naming the project.
pub const ACCOUNT: &str = "Hetzner project of this token";

/// Hetzner Cloud, seen with one API token (one project).
#[derive(Debug)]
pub struct HetznerProvider {
    client: Client,
    policy: RetryPolicy,
}

impl HetznerProvider {
    /// A client of the API at `base_url` (`DEFAULT_BASE_URL`, or a fake's URL) using
    /// `token`, sharing `limiter` with every other client of the same project
    /// (`RateLimiter::hetzner()`).
    pub fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            client: Client::new(base_url, token, limiter, policy.clone())?,
            policy,
        })
    }

    /// Servers carrying every label of `selector` (Hetzner label-selector syntax).
    async fn servers_by_selector(
        &self,
        selector: &str,
    ) -> Result<Vec<wire::Server>, ProviderError> {
        self.client
            .list("servers", &[("label_selector", selector)])
            .await
    }
}

#[async_trait]
impl CloudProvider for HetznerProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Hetzner
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        let locations: Vec<wire::Location> = self.client.list("locations", &[]).await?;
        Ok(locations
            .into_iter()
            .map(|l| Region {
                name: if l.description.is_empty() {
                    l.name.clone()
                } else {
                    l.description
                },
                id: l.name,
            })
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        if region.trim().is_empty() {
            return Err(ProviderError::new(
                ProviderId::Hetzner,
                ErrorKind::InvalidRequest,
                "invalid_input",
                "a location is required to list server types",
            ));
        }
        let types: Vec<wire::ServerType> = self.client.list("server_types", &[]).await?;
        Ok(types
            .into_iter()
            .filter_map(|t| size_in(t, region))
            .collect())
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        create::create_server(self, req).await
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        let id = server_id(id)?;
        let env: wire::ServerEnvelope = self.client.get(&format!("servers/{id}"), &[]).await?;
        Ok(server_info(&env.server))
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        delete::delete_provision_resources(self, server, ownership).await
    }

    /// A page holds 50 servers: one label selector (`levelrail-provision in (…)`) reads
    /// the servers of 50 provisions in one call.
    fn poll_batch(&self) -> usize {
        50
    }

    fn poll_group(&self, _server_id: &str) -> Option<String> {
        Some(String::new())
    }

    async fn poll_servers(
        &self,
        control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        let selector = labels::provisions_selector(
            control_plane,
            targets.iter().map(|t| t.provision_id.as_str()),
        );
        let servers = self.servers_by_selector(&selector).await?;
        Ok(servers.iter().map(server_info).collect())
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let servers = self
            .servers_by_selector(&labels::control_plane_selector(control_plane))
            .await?;
        Ok(servers.iter().map(server_info).collect())
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        // Read: any authenticated GET; a wrong token fails here with `unauthorized`.
        let _: serde_json::Value = self.client.get("servers", &[("per_page", "1")]).await?;
        // Write: an SSH key the API must refuse as invalid. Validation runs only after the
        // token was allowed to write, so `invalid_input` proves write access without
        // creating anything; a read-only token gets `token_readonly` (401) or `forbidden`.
        let probe = serde_json::json!({ "name": "levelrail-write-probe", "public_key": "levelrail-probe-not-a-key" });
        let can_write = match self
            .client
            .post::<wire::SshKeyEnvelope>("ssh_keys", &probe)
            .await
        {
            Ok(created) => {
                // Not expected; never leave it behind.
                self.client
                    .delete(&format!("ssh_keys/{}", created.ssh_key.id))
                    .await?;
                true
            }
            // `uniqueness_error`: a key of that name exists; also only checked for writers.
            Err(e) if matches!(e.reason, Reason::InvalidInput | Reason::AlreadyExists) => true,
            Err(e) if e.kind == ErrorKind::Unauthorized => false,
            Err(e) => return Err(e),
        };
        let message = if can_write {
            "the token can read and create resources in its Hetzner project"
        } else {
            "the token is read-only: create a Read & Write API token in the Hetzner Console"
        };
        Ok(CapabilityReport {
            can_write,
            account: ACCOUNT.to_owned(),
            message: message.to_owned(),
            permissions: vec![
                PermissionCheck {
                    name: "read".into(),
                    granted: true,
                },
                PermissionCheck {
                    name: "write".into(),
                    granted: can_write,
                },
            ],
        })
    }
}

/// The size `t` offers in `location`, unless deprecated there or not sold there.
fn size_in(t: wire::ServerType, location: &str) -> Option<Size> {
    let deprecated_here = t
        .locations
        .iter()
        .any(|l| l.name == location && l.deprecation.as_ref().is_some_and(|d| !d.is_null()));
    let listed_elsewhere_only =
        !t.locations.is_empty() && !t.locations.iter().any(|l| l.name == location);
    if t.deprecated == Some(true)
        || t.deprecation.as_ref().is_some_and(|d| !d.is_null())
        || deprecated_here
        || listed_elsewhere_only
    {
        return None;
    }
    let price = decimal(
        &t.prices
            .iter()
            .find(|p| p.location == location)?
            .price_monthly
            .gross,
    );
    let architecture = CpuArch::parse(&t.architecture).unwrap_or(CpuArch::X86_64);
    Some(Size {
        architecture,
        unavailable_reason: None,
        name: if t.description.is_empty() {
            t.name.to_uppercase()
        } else {
            t.description.clone()
        },
        id: t.name,
        vcpus: t.cores,
        memory_mb: (t.memory * 1024.0).round() as u32,
        disk_gb: t.disk.round() as u32,
        pricing: Pricing::Known(Price::monthly(price, "EUR")),
    })
}

/// `"4.5100000000"` → `"4.51"`: trailing zeros dropped, at least two decimals kept.
fn decimal(s: &str) -> String {
    let s = s.trim();
    let Some((int, frac)) = s.split_once('.') else {
        return format!("{s}.00");
    };
    let frac = frac.trim_end_matches('0');
    format!("{int}.{frac:0<2}")
}

/// Hetzner's server status words, mapped.
fn state_of(status: &str) -> ServerState {
    match status {
        "running" => ServerState::Running,
        "off" | "stopping" | "deleting" => ServerState::Failed,
        // initializing, starting, rebuilding, migrating, unknown, and words added later.
        _ => ServerState::Pending,
    }
}

fn server_info(s: &wire::Server) -> ServerInfo {
    ServerInfo {
        id: s.id.to_string(),
        name: s.name.clone(),
        state: state_of(&s.status),
        provider_state: s.status.clone(),
        ipv4: s
            .public_net
            .as_ref()
            .and_then(|n| n.ipv4.as_ref())
            .map(|v| v.ip.clone())
            .filter(|ip| !ip.is_empty()),
        provision_id: s.labels.get(labels::PROVISION).cloned(),
    }
}

/// Hetzner ids are integers; anything else cannot name a Hetzner server.
fn server_id(id: &str) -> Result<u64, ProviderError> {
    id.trim().parse().map_err(|_| {
        ProviderError::new(
            ProviderId::Hetzner,
            ErrorKind::InvalidRequest,
            "invalid_id",
            &format!("`{}` is not a Hetzner server id", super::error::clip(id)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_three_states() {
        for s in [
            "initializing",
            "starting",
            "rebuilding",
            "migrating",
            "unknown",
            "new-word",
        ] {
            assert_eq!(state_of(s), ServerState::Pending, "{s}");
        }
        assert_eq!(state_of("running"), ServerState::Running);
        for s in ["off", "stopping", "deleting"] {
            assert_eq!(state_of(s), ServerState::Failed, "{s}");
        }
    }

    #[test]
    fn prices_are_normalised_decimal_strings() {
        assert_eq!(decimal("4.5100000000"), "4.51");
        assert_eq!(decimal("4.5101000000"), "4.5101");
        assert_eq!(decimal("5.0000"), "5.00");
        assert_eq!(decimal("12"), "12.00");
    }

    #[test]
    fn sizes_carry_the_locations_price() {
        let t = || -> wire::ServerType {
            serde_json::from_value(serde_json::json!({
                "name": "cx22", "description": "CX22", "cores": 2, "memory": 4.0, "disk": 40,
                "deprecated": false, "deprecation": null,
                "prices": [{ "location": "fsn1", "price_monthly": { "gross": "4.5101000000", "net": "3.79" } }],
                "locations": [{ "name": "fsn1", "deprecation": null }, { "name": "ash", "deprecation": null }]
            }))
            .expect("server type")
        };
        let fsn1 = size_in(t(), "fsn1").expect("sold in fsn1");
        assert_eq!(
            (
                fsn1.pricing
                    .price()
                    .map(|p| (p.monthly.as_str(), p.currency.as_str())),
                fsn1.memory_mb
            ),
            (Some(("4.5101", "EUR")), 4096)
        );
        assert!(size_in(t(), "ash").is_none(), "listed but without a price");
        assert!(size_in(t(), "hel1").is_none(), "not listed");
    }

    #[test]
    fn server_ids_must_be_integers() {
        assert_eq!(server_id("42").ok(), Some(42));
        assert_eq!(
            server_id("abc").map_err(|e| e.kind),
            Err(ErrorKind::InvalidRequest)
        );
    }
}
