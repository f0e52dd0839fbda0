//! The provider clients this control plane offers, with their endpoints (overridable per
//! provider for proxies, sovereign clouds, tests and demo mode).
use std::sync::Arc;

use levelrail_clouds::CloudProvider;
use levelrail_clouds::aws::{AwsProvider, AwsSettings};
use levelrail_clouds::azure::{self, AzureProvider};
use levelrail_clouds::digitalocean::DigitalOceanProvider;
use levelrail_clouds::gcp::{self, GcpProvider};
use levelrail_clouds::hetzner::HetznerProvider;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::registry::{ClientParts, Clients, ProviderSpec};
use levelrail_credentials::broker::GrantIssuers;
use levelrail_credentials::broker::azure::AzureGrantIssuer;
use levelrail_credentials::broker::gcp::{GcpGrantIssuer, GoogleEndpoints};
use levelrail_credentials::model::ProviderId;

/// Where each provider's API lives.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Hetzner Cloud API base (`…/v1`).
    pub hetzner: String,
    /// DigitalOcean API base (`…/v2`).
    pub digitalocean: String,
    /// AWS: EC2 / STS endpoint overrides and operator-named subnets.
    pub aws: AwsSettings,
    /// Azure and GCP: token endpoints, APIs and an optional extra root CA.
    pub azure_gcp: AzureGcp,
}

impl Default for Endpoints {
    fn default() -> Self {
        Self {
            hetzner: "https://api.hetzner.cloud/v1".into(),
            digitalocean: "https://api.digitalocean.com/v2".into(),
            aws: AwsSettings::default(),
            azure_gcp: AzureGcp::default(),
        }
    }
}

/// Every provider with a client in this build, at its endpoint.
pub fn clients(endpoints: &Endpoints) -> Clients {
    Clients::default()
        .with(
            ProviderId::Hetzner,
            ProviderSpec {
                base_url: endpoints.hetzner.clone(),
                construct: Arc::new(|p: ClientParts<'_>| {
                    let client = HetznerProvider::new(
                        p.base_url,
                        p.access.bearer(ProviderId::Hetzner)?,
                        p.limiter,
                        p.policy,
                    )?;
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
                    let client = DigitalOceanProvider::new(
                        p.base_url,
                        p.access.bearer(ProviderId::DigitalOcean)?,
                        p.limiter,
                        p.policy,
                    )?;
                    Ok(Arc::new(client) as Arc<dyn CloudProvider>)
                }),
                limiter: RateLimiter::digitalocean,
            },
        )
        .with(ProviderId::Aws, aws_spec(endpoints.aws.clone()))
        .with(ProviderId::Azure, azure_spec(&endpoints.azure_gcp))
        .with(ProviderId::Gcp, gcp_spec(&endpoints.azure_gcp))
}

/// AWS: the grant carries session credentials instead of a bearer token; the base URL is
/// the EC2 endpoint override, or the regional endpoints' pattern.
fn aws_spec(settings: AwsSettings) -> ProviderSpec {
    ProviderSpec {
        // The client resolves its endpoint per region (or uses the override) from `settings`;
        // the spec names it for logs and `Debug`.
        base_url: settings
            .ec2_endpoint
            .clone()
            .unwrap_or_else(|| "https://ec2.<region>.amazonaws.com".into()),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let keys = p.access.aws(ProviderId::Aws)?;
            let client = AwsProvider::new(
                keys,
                p.context.region.as_deref(),
                settings.clone(),
                p.limiter,
                p.policy,
            )?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter: levelrail_clouds::aws::rate_limiter,
    }
}

/// Where the Azure and GCP token endpoints and APIs live, and an extra root CA their
/// clients trust (a demo or test cloud's, a TLS-inspecting proxy's).
#[derive(Debug, Clone, Default)]
pub struct AzureGcp {
    /// The flags' values (public clouds by default).
    pub urls: crate::config::AzureGcpEndpoints,
    /// Extra root certificates, PEM.
    pub ca_pem: Option<String>,
}

impl AzureGcp {
    /// From the flags, reading the CA file if one is named.
    pub fn from_config(cfg: &crate::config::AzureGcpEndpoints) -> anyhow::Result<Self> {
        let ca_pem = match &cfg.cloud_ca_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?,
            ),
            None => None,
        };
        Ok(Self {
            urls: cfg.clone(),
            ca_pem,
        })
    }

    /// `issuers` with the Azure AD and Google token exchanges registered.
    pub fn issuers(&self, issuers: GrantIssuers) -> anyhow::Result<GrantIssuers> {
        let ca = self.ca_pem.as_deref();
        let azure = AzureGrantIssuer::new(&self.urls.azure_authority_url, ca)?;
        let google = GoogleEndpoints {
            token_url: self.urls.gcp_token_url.clone(),
            sts_url: self.urls.gcp_sts_url.clone(),
            iam_credentials_url: self.urls.gcp_iam_credentials_url.clone(),
        };
        let gcp = GcpGrantIssuer::new(google, ca)?;
        Ok(issuers
            .with(ProviderId::Azure, Arc::new(azure))
            .with(ProviderId::Gcp, Arc::new(gcp)))
    }
}

/// Azure: an AAD access token in the grant, the subscription and resource group in its context.
fn azure_spec(cfg: &AzureGcp) -> ProviderSpec {
    let ca = cfg.ca_pem.clone();
    ProviderSpec {
        base_url: cfg.urls.azure_arm_url.clone(),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let client = AzureProvider::new(
                p.base_url,
                p.access.bearer(ProviderId::Azure)?,
                p.context,
                p.limiter,
                p.policy,
                ca.as_deref(),
            )?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter: azure::limiter,
    }
}

/// GCP: an OAuth access token in the grant, the project in its context.
fn gcp_spec(cfg: &AzureGcp) -> ProviderSpec {
    let ca = cfg.ca_pem.clone();
    let resource_manager = cfg.urls.gcp_resource_manager_url.clone();
    ProviderSpec {
        base_url: cfg.urls.gcp_compute_url.clone(),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let client = GcpProvider::new(
                p.base_url,
                &resource_manager,
                p.access.bearer(ProviderId::Gcp)?,
                p.context,
                p.limiter,
                p.policy,
                ca.as_deref(),
            )?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter: gcp::limiter,
    }
}
