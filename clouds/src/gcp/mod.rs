//! Google Compute Engine over the v1 REST API: zones as regions, machine types that are not
//! deprecated, instance creation (deny-ingress firewall checked and repaired on every use,
//! SSH keys through metadata, an ephemeral `ONE_TO_ONE_NAT` address, the `user-data`
//! metadata key, labels, a `requestId` derived from the provision, operations followed to
//! `DONE`), get / delete / list by label, and a probe that reads the project and asks Cloud
//! Resource Manager (`projects.testIamPermissions`) which of [`REQUIRED_PERMISSIONS`] the
//! credential holds, creating nothing.
//! Server ids are `<zone>/<name>`.
use levelrail_types::{CpuArch, PermissionCheck};
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Method;
use secrecy::SecretString;
use serde_json::Value;

use super::cloud::{Cloud, Endpoint, Settings};
use super::http::{ApiClient, RetryPolicy};
use super::pricing::{self, PriceRead};
use super::ratelimit::{Bucket, RateLimiter};
use super::registry::{ClientParts, GrantContext, ProviderSpec};
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, PollTarget, Pricing,
    ProviderError, ProviderId, Region, ServerInfo, ServerState, Size,
};

mod client;
mod create;
mod errors;
mod labels;
mod prices;
mod wire;

use client::Compute;

/// The public Compute Engine v1 endpoint (paths continue with `projects/<project>/…`).
pub const DEFAULT_BASE_URL: &str = "https://compute.googleapis.com/compute/v1";
/// The public Cloud Resource Manager v3 endpoint (`projects/<project>:testIamPermissions`).
pub const DEFAULT_RESOURCE_MANAGER_URL: &str = "https://cloudresourcemanager.googleapis.com/v3";
pub use prices::DEFAULT_BILLING_URL;

/// Where a [`GcpProvider`] finds Google's APIs.
#[derive(Debug, Clone, Copy)]
pub struct GcpEndpoints<'a> {
    /// Compute Engine v1 (`DEFAULT_BASE_URL`).
    pub compute: &'a str,
    /// Cloud Resource Manager v3 (`DEFAULT_RESOURCE_MANAGER_URL`).
    pub resource_manager: &'a str,
    /// Cloud Billing v1, its catalog of prices (`DEFAULT_BILLING_URL`).
    pub billing: &'a str,
}

/// Google Cloud in the table of clouds: an OAuth access token in the grant, the project in
/// its context. The token endpoints are the credentials service's (its token exchange).
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::Gcp,
    endpoints: &[
        Endpoint {
            key: "token",
            flag: "gcp-token-url",
            env: "LEVELRAIL_GCP_TOKEN_URL",
            default: Some("https://oauth2.googleapis.com/token"),
            help: "Google OAuth token endpoint (service-account keys)",
        },
        Endpoint {
            key: "sts",
            flag: "gcp-sts-url",
            env: "LEVELRAIL_GCP_STS_URL",
            default: Some("https://sts.googleapis.com/v1/token"),
            help: "Google STS token endpoint (workload identity federation)",
        },
        Endpoint {
            key: "iam-credentials",
            flag: "gcp-iam-credentials-url",
            env: "LEVELRAIL_GCP_IAM_CREDENTIALS_URL",
            default: Some("https://iamcredentials.googleapis.com"),
            help: "Google IAM Credentials base URL (service-account impersonation after \
                   federation)",
        },
        Endpoint {
            key: "compute",
            flag: "gcp-compute-url",
            env: "LEVELRAIL_GCP_COMPUTE_URL",
            default: Some(DEFAULT_BASE_URL),
            help: "Compute Engine v1 base URL",
        },
        Endpoint {
            key: "resource-manager",
            flag: "gcp-resource-manager-url",
            env: "LEVELRAIL_GCP_RESOURCE_MANAGER_URL",
            default: Some(DEFAULT_RESOURCE_MANAGER_URL),
            help: "Cloud Resource Manager v3 base URL (the probe's projects.testIamPermissions)",
        },
        Endpoint {
            key: "billing",
            flag: "gcp-billing-url",
            env: "LEVELRAIL_GCP_BILLING_URL",
            default: Some(DEFAULT_BILLING_URL),
            help: "Cloud Billing v1 base URL (the Compute Engine SKU prices of the catalog)",
        },
    ],
    reason: errors::reason,
    spec,
};

fn spec(settings: &Settings) -> ProviderSpec {
    let ca = settings.extra_ca_pem.clone();
    let resource_manager = settings
        .url(ProviderId::Gcp, "resource-manager")
        .unwrap_or_default();
    let billing = settings.url(ProviderId::Gcp, "billing").unwrap_or_default();
    ProviderSpec {
        base_url: settings.url(ProviderId::Gcp, "compute").unwrap_or_default(),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let endpoints = GcpEndpoints {
                compute: p.base_url,
                resource_manager: &resource_manager,
                billing: &billing,
            };
            let client = GcpProvider::new(
                endpoints,
                p.access.bearer(ProviderId::Gcp)?,
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

/// Every IAM permission the client's calls need in the project: reading the catalog and the
/// default network, the deny-ingress and SSH firewalls (creating a firewall also needs
/// `compute.networks.updatePolicy` on its network), and creating (with metadata, labels,
/// network tags, a boot disk and an external address), reading, listing and deleting
/// instances, with their operations. Compute Instance Admin (v1) plus Compute Security
/// Admin cover them, or a custom role listing exactly these.
pub const REQUIRED_PERMISSIONS: [&str; 21] = [
    "compute.projects.get",
    "compute.zones.list",
    "compute.machineTypes.list",
    "compute.networks.get",
    "compute.networks.updatePolicy",
    "compute.firewalls.get",
    "compute.firewalls.create",
    "compute.firewalls.update",
    "compute.firewalls.delete",
    "compute.instances.create",
    "compute.instances.get",
    "compute.instances.list",
    "compute.instances.delete",
    "compute.instances.setMetadata",
    "compute.instances.setLabels",
    "compute.instances.setTags",
    "compute.disks.create",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
    "compute.zoneOperations.get",
    "compute.globalOperations.get",
];

/// Compute Engine's default API rate quotas are per project and minute (on the order of a
/// thousand reads and a few hundred writes); the client stays at 20 per second sustained.
pub fn limiter() -> RateLimiter {
    RateLimiter::new(&[Bucket {
        capacity: 100.0,
        refill_per_sec: 20.0,
    }])
}

/// Compute Engine, seen with one access token in one project.
#[derive(Debug)]
pub struct GcpProvider {
    compute: Compute,
    resource_manager: ApiClient,
    billing: ApiClient,
    project: String,
}

impl GcpProvider {
    /// A client of Compute, Cloud Resource Manager and the Cloud Billing catalog at
    /// `endpoints` (Google's, or a fake's) with an OAuth access token, acting in
    /// `context.project_id`; `extra_root_pem` adds a CA.
    pub fn new(
        endpoints: GcpEndpoints<'_>,
        token: SecretString,
        context: &GrantContext,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let valid = |project: &&str| {
            !project.is_empty()
                && project.bytes().all(|b| {
                    b.is_ascii_lowercase()
                        || b.is_ascii_digit()
                        || b == b'-'
                        || b == b':'
                        || b == b'.'
                })
        };
        let Some(project) = context.project_id.as_deref().filter(valid) else {
            return Err(ProviderError::new(
                ProviderId::Gcp,
                ErrorKind::InvalidRequest,
                "invalid_context",
                "the grant names no valid GCP project",
            ));
        };
        let api = |url: &str| {
            ApiClient::with_extra_root(
                ProviderId::Gcp,
                url,
                token.clone(),
                limiter.clone(),
                policy.clone(),
                errors::classify,
                extra_root_pem,
            )
        };
        Ok(Self {
            resource_manager: api(endpoints.resource_manager)?,
            // The catalog has its own quota: its pauses must not hold Compute's calls.
            billing: ApiClient::with_extra_root(
                ProviderId::Gcp,
                endpoints.billing,
                token.clone(),
                Arc::clone(&prices::LIMITER),
                policy.clone(),
                errors::classify,
                extra_root_pem,
            )?,
            compute: Compute::new(
                endpoints.compute,
                project,
                token.clone(),
                limiter.clone(),
                policy.clone(),
                extra_root_pem,
            )?,
            project: project.to_owned(),
        })
    }

    /// The machine types of `zone` that are not deprecated, without prices.
    async fn machine_types(&self, zone: &str) -> Result<Vec<Size>, ProviderError> {
        let types: Vec<wire::MachineType> = self
            .compute
            .items(&format!("zones/{zone}/machineTypes"))
            .await?;
        Ok(types
            .into_iter()
            .filter(|t| {
                t.deprecated
                    .as_ref()
                    .and_then(|d| d.get("state"))
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            })
            .map(|t| Size {
                architecture: machine_type_arch(&t.architecture, &t.name),
                unavailable_reason: None,
                name: if t.description.is_empty() {
                    t.name.clone()
                } else {
                    format!("{} ({})", t.name, t.description)
                },
                id: t.name,
                vcpus: t.guest_cpus,
                memory_mb: t.memory_mb,
                // The boot disk is sized by the create (20 GB), not by the machine type.
                disk_gb: 0,
                pricing: Pricing::Unread,
            })
            .collect())
    }

    /// The [`REQUIRED_PERMISSIONS`] the credential lacks in the project, by
    /// `projects.testIamPermissions` (which answers the subset held; it creates nothing).
    async fn missing_permissions(&self) -> Result<Vec<&'static str>, ProviderError> {
        let body = serde_json::json!({ "permissions": REQUIRED_PERMISSIONS });
        let answer: Value = self
            .resource_manager
            .send(
                Method::POST,
                &format!("projects/{}:testIamPermissions", self.project),
                Some(&body),
                true,
            )
            .await?
            .json(ProviderId::Gcp)?;
        let held: Vec<&str> = answer
            .get("permissions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        Ok(REQUIRED_PERMISSIONS
            .into_iter()
            .filter(|p| !held.contains(p))
            .collect())
    }
}

#[async_trait]
impl CloudProvider for GcpProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Gcp
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        let zones: Vec<wire::Zone> = self.compute.items("zones").await?;
        Ok(zones
            .into_iter()
            .filter(|z| z.status == "UP")
            .map(|z| {
                let region = z.region.rsplit('/').next().unwrap_or_default();
                let name = if region.is_empty() {
                    z.name.clone()
                } else {
                    format!("{} ({region})", z.name)
                };
                Region { id: z.name, name }
            })
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(ProviderError::new(
                ProviderId::Gcp,
                ErrorKind::InvalidRequest,
                "invalid_input",
                "a zone is required to list machine types",
            ));
        }
        self.machine_types(region).await
    }

    async fn list_prices(&self, zone: &str, sizes: &[Size]) -> Option<PriceRead> {
        Some(
            prices::rates(&self.billing, prices::region_of(zone))
                .await
                .map(|rates| rates.compose(sizes, zone))
                .map_err(|e| pricing::read_failure(prices::WHAT, &e)),
        )
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        create::create_server(self, req).await
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        let (zone, name) = server_id(id)?;
        let instance: wire::Instance = self
            .compute
            .get(&format!("zones/{zone}/instances/{name}"))
            .await?;
        Ok(server_info(&instance))
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        create::delete_provision_resources(self, server, ownership).await
    }

    /// The zonal list filtered by `(name = "…") OR (name = "…")`, up to 20 instances of
    /// one zone.
    fn poll_batch(&self) -> usize {
        20
    }

    fn poll_group(&self, id: &str) -> Option<String> {
        server_id(id).ok().map(|(zone, _)| zone.to_owned())
    }

    async fn poll_servers(
        &self,
        _control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        let mut zone = None;
        let mut terms = Vec::with_capacity(targets.len());
        for t in targets {
            let (z, name) = server_id(&t.server_id)?;
            if zone.is_some_and(|first| first != z) {
                return Err(ProviderError::new(
                    ProviderId::Gcp,
                    ErrorKind::InvalidRequest,
                    "invalid",
                    "one poll reads the instances of one zone",
                ));
            }
            zone = Some(z);
            terms.push(format!("(name = \"{name}\")"));
        }
        let Some(zone) = zone else {
            return Ok(Vec::new());
        };
        let filter = terms.join(" OR ");
        let rest = format!("zones/{zone}/instances?filter={}", client::encode(&filter));
        let mut out = Vec::new();
        for page in self.compute.pages(&rest).await? {
            let Some(list) = page.get("items") else {
                continue;
            };
            let instances: Vec<wire::Instance> = serde_json::from_value(list.clone())
                .map_err(|e| client::unexpected(&e.to_string()))?;
            out.extend(instances.iter().map(server_info));
        }
        Ok(out)
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let filter = format!(
            "labels.{} = \"{}\"",
            labels::CONTROL_PLANE,
            labels::value(control_plane)
        );
        let rest = format!("aggregated/instances?filter={}", client::encode(&filter));
        let mut out = Vec::new();
        for page in self.compute.pages(&rest).await? {
            let Some(scopes) = page.get("items").and_then(Value::as_object) else {
                continue;
            };
            for scoped in scopes.values() {
                let Some(list) = scoped.get("instances") else {
                    continue;
                };
                let instances: Vec<wire::Instance> = serde_json::from_value(list.clone())
                    .map_err(|e| client::unexpected(&e.to_string()))?;
                out.extend(instances.iter().map(server_info));
            }
        }
        Ok(out)
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        let project: Value = self.compute.get("").await?;
        let name = project
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(&self.project)
            .to_owned();
        if self.compute.find::<Value>(wire::NETWORK).await?.is_none() {
            return Err(ProviderError::new(
                ProviderId::Gcp,
                ErrorKind::InvalidRequest,
                "missing_default_network",
                &format!(
                    "project {name} has no VPC network named default, which provisioning uses; create it (auto mode) or restore it"
                ),
            ));
        }
        let missing = self.missing_permissions().await?;
        let message = if missing.is_empty() {
            format!(
                "project {name}: the credential holds every permission provisioning uses ({} checked with testIamPermissions)",
                REQUIRED_PERMISSIONS.len()
            )
        } else {
            format!(
                "project {name}: the credential lacks {} of the permissions provisioning uses: {}; grant Compute Instance Admin (v1) and Compute Security Admin, or a custom role with them",
                missing.len(),
                missing.join(", ")
            )
        };
        let permissions = PermissionCheck::of(REQUIRED_PERMISSIONS, &missing);
        Ok(CapabilityReport {
            can_write: missing.is_empty(),
            account: format!("project {name}"),
            message,
            permissions,
        })
    }
}

/// `<zone>/<name>` split and checked (both are RFC 1035 names, nothing else reaches a path).
fn server_id(id: &str) -> Result<(&str, &str), ProviderError> {
    match id.split_once('/') {
        Some((zone, name)) if labels::valid_name(zone) && labels::valid_name(name) => {
            Ok((zone, name))
        }
        _ => Err(ProviderError::new(
            ProviderId::Gcp,
            ErrorKind::NotFound,
            "notFound",
            "not a GCP server id (<zone>/<name>)",
        )),
    }
}

/// RUNNING → running; PROVISIONING, STAGING, PENDING and REPAIRING → pending; stopping,
/// stopped, suspended or being torn down → failed.
fn state_of(status: &str) -> ServerState {
    match status {
        "RUNNING" => ServerState::Running,
        "STOPPING" | "STOPPED" | "TERMINATED" | "SUSPENDING" | "SUSPENDED" | "PENDING_STOP"
        | "DEPROVISIONING" => ServerState::Failed,
        _ => ServerState::Pending,
    }
}

fn server_info(i: &wire::Instance) -> ServerInfo {
    let zone = i.zone.rsplit('/').next().unwrap_or_default();
    ServerInfo {
        id: format!("{zone}/{}", i.name),
        name: i.name.clone(),
        state: state_of(&i.status),
        provider_state: i.status.clone(),
        ipv4: i
            .network_interfaces
            .iter()
            .flat_map(|n| n.access_configs.iter())
            .map(|a| a.nat_ip.clone())
            .find(|ip| !ip.is_empty()),
        provision_id: i.labels.get(labels::PROVISION).cloned(),
    }
}

/// A machine type's architecture: the API's `architecture`, else its family (Tau T2A, C4A
/// and N4A are Arm), else x86-64.
fn machine_type_arch(architecture: &str, name: &str) -> CpuArch {
    match architecture {
        "ARM64" => CpuArch::Aarch64,
        "X86_64" => CpuArch::X86_64,
        _ if ["t2a-", "c4a-", "n4a-"].iter().any(|f| name.starts_with(f)) => CpuArch::Aarch64,
        _ => CpuArch::X86_64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_machine_types_are_told_by_the_api_or_their_family() {
        assert_eq!(machine_type_arch("ARM64", "x"), CpuArch::Aarch64);
        assert_eq!(
            machine_type_arch("X86_64", "t2a-standard-1"),
            CpuArch::X86_64
        );
        assert_eq!(machine_type_arch("", "t2a-standard-1"), CpuArch::Aarch64);
        assert_eq!(
            machine_type_arch("ARCHITECTURE_UNSPECIFIED", "c4a-highcpu-4"),
            CpuArch::Aarch64
        );
        assert_eq!(machine_type_arch("", "e2-small"), CpuArch::X86_64);
    }

    #[test]
    fn statuses_map_and_ids_are_checked() {
        assert_eq!(state_of("RUNNING"), ServerState::Running);
        for s in ["PROVISIONING", "STAGING", "REPAIRING", "PENDING"] {
            assert_eq!(state_of(s), ServerState::Pending, "{s}");
        }
        for s in ["TERMINATED", "STOPPING", "SUSPENDED", "DEPROVISIONING"] {
            assert_eq!(state_of(s), ServerState::Failed, "{s}");
        }
        assert_eq!(
            server_id("us-central1-a/web-1").ok(),
            Some(("us-central1-a", "web-1"))
        );
        assert!(server_id("web-1").is_err() && server_id("a/../b").is_err());
        let i: wire::Instance = serde_json::from_value(serde_json::json!({
            "name": "web-1", "zone": "https://x/compute/v1/projects/p/zones/us-central1-a", "status": "RUNNING",
            "labels": { "levelrail-provision": "npv_1" },
            "networkInterfaces": [{ "accessConfigs": [{ "natIP": "34.1.2.3" }] }]
        }))
        .expect("instance");
        let info = server_info(&i);
        assert_eq!(
            (
                info.id.as_str(),
                info.ipv4.as_deref(),
                info.provision_id.as_deref()
            ),
            ("us-central1-a/web-1", Some("34.1.2.3"), Some("npv_1"))
        );
    }
}
