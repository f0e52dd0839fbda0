//! Microsoft Azure over the ARM REST API: physical locations, VM sizes of a location (Resource
//! SKUs: restricted sizes and those that cannot boot the image's generation unavailable), VM
//! creation in the operator's existing resource group (network resources, Ubuntu 24.04,
//! base64 `customData`, key or throw-away-password auth, ownership tags, `deleteOption:
//! Delete`, long-running operations followed), provisioning and power state, deletion with
//! the cascade verified, listing by tag, and a probe that reads the resource group, checks
//! the principal's permissions there and names the subscription-scope reads it lacks.
use std::sync::Arc;

use async_trait::async_trait;
use secrecy::SecretString;
use serde_json::Value;

use super::cloud::{Cloud, Endpoint, Settings};
use super::http::RetryPolicy;
use super::pricing::{self, PriceRead};
use super::ratelimit::{Bucket, RateLimiter};
use super::registry::{ClientParts, GrantContext, ProviderSpec};
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, ProviderError, ProviderId,
    Region, ServerInfo, ServerState, Size,
};

mod client;
mod create;
mod delete;
mod errors;
mod names;
mod prices;
mod probe;
mod skus;
mod wire;

pub use prices::DEFAULT_PRICES_URL;
pub use probe::{REQUIRED_ACTIONS, SUBSCRIPTION_ACTIONS};

use client::Arm;
use names::Scope;
use prices::RetailPrices;

/// The public ARM endpoint.
pub const DEFAULT_BASE_URL: &str = "https://management.azure.com";
/// The public Azure AD authority (the credentials service's token exchange).
pub const DEFAULT_AUTHORITY_URL: &str = "https://login.microsoftonline.com";

/// Azure in the table of clouds: an AAD access token in the grant, the subscription and
/// resource group in its context.
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::Azure,
    endpoints: &[
        Endpoint {
            key: "authority",
            flag: "azure-authority-url",
            env: "LEVELRAIL_AZURE_AUTHORITY_URL",
            default: Some(DEFAULT_AUTHORITY_URL),
            help: "Azure AD authority; tokens come from <authority>/<tenant>/oauth2/v2.0/token",
        },
        Endpoint {
            key: "arm",
            flag: "azure-arm-url",
            env: "LEVELRAIL_AZURE_ARM_URL",
            default: Some(DEFAULT_BASE_URL),
            help: "Azure Resource Manager base URL",
        },
        Endpoint {
            key: "prices",
            flag: "azure-prices-url",
            env: "LEVELRAIL_AZURE_PRICES_URL",
            default: Some(prices::DEFAULT_PRICES_URL),
            help: "Azure Retail Prices API base URL (VM prices; public, no credential is sent)",
        },
    ],
    reason: errors::reason,
    spec,
};

fn spec(settings: &Settings) -> ProviderSpec {
    let ca = settings.extra_ca_pem.clone();
    let prices_url = settings
        .url(ProviderId::Azure, "prices")
        .unwrap_or_default();
    ProviderSpec {
        base_url: settings.url(ProviderId::Azure, "arm").unwrap_or_default(),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let client = AzureProvider::new(
                p.base_url,
                &prices_url,
                p.access.bearer(ProviderId::Azure)?,
                p.context,
                p.limiter,
                p.policy,
                ca.as_deref(),
            )?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter,
    }
}

/// api-version of Microsoft.Resources (resource groups, generic resource lists).
pub(super) const API_RESOURCES: &str = "2021-04-01";
/// api-version of subscription locations.
pub(super) const API_SUBSCRIPTIONS: &str = "2022-12-01";
/// api-version of Microsoft.Network.
pub(super) const API_NETWORK: &str = "2023-09-01";
/// api-version of Microsoft.Compute.
pub(super) const API_COMPUTE: &str = "2024-07-01";
/// api-version of Microsoft.Compute Resource SKUs.
pub(super) const API_SKUS: &str = "2021-07-01";
/// api-version of Microsoft.Authorization permissions.
pub(super) const API_AUTHORIZATION: &str = "2022-04-01";

/// ARM throttles per principal, subscription and region with token buckets (writes: 200,
/// refilled at 10 per second); the client stays under the write bucket for every call.
pub fn limiter() -> RateLimiter {
    RateLimiter::new(&[Bucket {
        capacity: 200.0,
        refill_per_sec: 10.0,
    }])
}

/// Azure, seen with one access token in one subscription and resource group.
#[derive(Debug)]
pub struct AzureProvider {
    arm: Arm,
    /// The Retail Prices API, or why its URL is unusable (prices are then unavailable;
    /// nothing else is).
    prices: Result<RetailPrices, ProviderError>,
    scope: Scope,
}

impl AzureProvider {
    /// A client of ARM at `base_url` (`DEFAULT_BASE_URL`, or a fake's) with an AAD access
    /// token, acting in `context`'s subscription and resource group, and of the Retail
    /// Prices API at `prices_url` (`DEFAULT_PRICES_URL`); `extra_root_pem` adds a trusted CA
    /// (tests and demo mode).
    pub fn new(
        base_url: &str,
        prices_url: &str,
        token: SecretString,
        context: &GrantContext,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.()".contains(&b))
        };
        let (Some(subscription), Some(resource_group)) = (
            context.subscription_id.as_deref().filter(|s| safe(s)),
            context.resource_group.as_deref().filter(|s| safe(s)),
        ) else {
            return Err(ProviderError::new(
                ProviderId::Azure,
                ErrorKind::InvalidRequest,
                "invalid_context",
                "the grant names no valid subscription and resource group",
            ));
        };
        Ok(Self {
            prices: RetailPrices::new(prices_url, policy.clone(), extra_root_pem),
            arm: Arm::new(base_url, token, limiter, policy, extra_root_pem)?,
            scope: Scope {
                subscription: subscription.to_owned(),
                resource_group: resource_group.to_owned(),
            },
        })
    }

    /// The VM `name` with its instance view and public IP.
    async fn server(&self, name: &str) -> Result<ServerInfo, ProviderError> {
        let vm: Value = self
            .arm
            .get(
                &format!("{}?$expand=instanceView", self.scope.vm(name)),
                API_COMPUTE,
            )
            .await?;
        let ip: Option<Value> = self
            .arm
            .find(&self.scope.public_ip(name), API_NETWORK)
            .await?;
        Ok(server_info(name, &vm, ip.as_ref()))
    }
}

#[async_trait]
impl CloudProvider for AzureProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Azure
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        let path = format!("{}/locations", self.scope.subscription_path());
        let locations: Vec<wire::Location> = self.arm.list(&path, API_SUBSCRIPTIONS).await?;
        Ok(locations
            .into_iter()
            .filter(wire::Location::is_physical)
            .map(|l| Region {
                name: if l.display_name.is_empty() {
                    l.name.clone()
                } else {
                    l.display_name
                },
                id: l.name,
            })
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        if region.is_empty() || !region.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ProviderError::new(
                ProviderId::Azure,
                ErrorKind::InvalidRequest,
                "invalid_input",
                "a location is required to list VM sizes",
            ));
        }
        skus::list_sizes(self, region).await
    }

    async fn list_prices(&self, region: &str, sizes: &[Size]) -> Option<PriceRead> {
        let read = match &self.prices {
            Ok(api) => api.prices(region).await,
            Err(e) => Err(e.clone()),
        };
        Some(pricing::complete(read, sizes, prices::WHAT, region))
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        create::create_server(self, req).await
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        if !names::valid_vm_name(id) {
            return Err(ProviderError::new(
                ProviderId::Azure,
                ErrorKind::NotFound,
                "ResourceNotFound",
                "no VM has this name",
            ));
        }
        self.server(id).await
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        delete::delete_provision_resources(self, server, ownership).await
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let filter = names::encode(&names::tag_filter(names::CONTROL_PLANE, control_plane));
        let path = format!("{}/resources?$filter={filter}", self.scope.group_path());
        let tagged: Vec<wire::GenericResource> = self.arm.list(&path, API_RESOURCES).await?;
        let mut out = Vec::new();
        for r in tagged.iter().filter(|r| {
            r.kind
                .eq_ignore_ascii_case("Microsoft.Compute/virtualMachines")
        }) {
            match self.server(&r.name).await {
                Ok(info) => out.push(info),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        probe::probe(self).await
    }
}

/// Running needs `provisioningState: Succeeded` and `PowerState/running` (the original
/// took Succeeded alone as running); stopped, deallocated, failed or deleting will not enroll.
fn state_of(vm: &Value) -> (ServerState, String) {
    let provisioning = client::provisioning_state(vm).to_owned();
    let power = vm
        .pointer("/properties/instanceView/statuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("code").and_then(Value::as_str))
        .find_map(|c| c.strip_prefix("PowerState/"))
        .unwrap_or("")
        .to_owned();
    let state = match (provisioning.as_str(), power.as_str()) {
        ("Failed" | "Deleting" | "Canceled", _) => ServerState::Failed,
        (_, "stopped" | "stopping" | "deallocated" | "deallocating") => ServerState::Failed,
        ("Succeeded", "running") => ServerState::Running,
        _ => ServerState::Pending,
    };
    let word = if power.is_empty() {
        provisioning
    } else {
        format!("{provisioning}/{power}")
    };
    (state, word)
}

fn server_info(name: &str, vm: &Value, ip: Option<&Value>) -> ServerInfo {
    let (state, provider_state) = state_of(vm);
    ServerInfo {
        id: name.to_owned(),
        name: name.to_owned(),
        state,
        provider_state,
        ipv4: ip
            .and_then(|ip| ip.pointer("/properties/ipAddress"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        provision_id: names::tag(vm, names::PROVISION).map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vm(provisioning: &str, power: Option<&str>) -> Value {
        let mut statuses =
            vec![json!({ "code": format!("ProvisioningState/{}", provisioning.to_lowercase()) })];
        if let Some(p) = power {
            statuses.push(json!({ "code": format!("PowerState/{p}") }));
        }
        json!({ "tags": { "levelrail-provision": "npv_1" }, "properties": { "provisioningState": provisioning, "instanceView": { "statuses": statuses } } })
    }

    #[test]
    fn running_needs_success_and_power() {
        assert_eq!(
            state_of(&vm("Succeeded", Some("running"))).0,
            ServerState::Running
        );
        assert_eq!(
            state_of(&vm("Succeeded", Some("starting"))).0,
            ServerState::Pending
        );
        assert_eq!(state_of(&vm("Succeeded", None)).0, ServerState::Pending);
        assert_eq!(
            state_of(&vm("Creating", Some("running"))).0,
            ServerState::Pending
        );
        assert_eq!(
            state_of(&vm("Succeeded", Some("deallocated"))).0,
            ServerState::Failed
        );
        assert_eq!(state_of(&vm("Failed", None)).0, ServerState::Failed);
        let info = server_info(
            "web-1",
            &vm("Succeeded", Some("running")),
            Some(&json!({ "properties": { "ipAddress": "20.1.2.3" } })),
        );
        assert_eq!(
            (
                info.ipv4.as_deref(),
                info.provision_id.as_deref(),
                info.provider_state.as_str()
            ),
            (Some("20.1.2.3"), Some("npv_1"), "Succeeded/running")
        );
    }
}
