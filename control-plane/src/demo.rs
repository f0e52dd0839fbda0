//! Demo mode (`levelrail serve --demo`): the simulated Hetzner, DigitalOcean, AWS (EC2 +
//! STS), Azure (AAD + ARM, over HTTPS with a demo CA) and GCP (OAuth + Compute) clouds run
//! in-process, with demo credentials stored for them, so a newcomer can run the whole Add
//! node wizard without a cloud account. Each server that reaches `running` boots through
//! the boot harness (`levelrail_sim::boot`): its user-data runs as cloud-init would run
//! it, so the node downloads the control plane's agent binary over TLS, checks its SHA-256,
//! reports its steps with the real `report-progress` script and starts the downloaded
//! binary, which enrolls.
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use levelrail_clouds::aws::AwsSettings;
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_clouds::{CreateServer, Ownership};
use levelrail_credentials::app::Credentials;
use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_sim::boot::{BootHarness, BootOptions};
use levelrail_sim::fakes::BootHook;
use levelrail_sim::fakes::aws::{FakeAws, FakeAwsConfig, FakeAwsHandle};
use levelrail_sim::fakes::azure::{FakeAzure, FakeAzureConfig, FakeAzureHandle};
use levelrail_sim::fakes::digitalocean::{FakeDigitalOcean, FakeDigitalOceanConfig};
use levelrail_sim::fakes::gcp::{FakeGcp, FakeGcpConfig, FakeGcpHandle};
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig, FakeHetznerHandle};
use secrecy::SecretString;
use tracing::info;

use crate::config::AzureGcpEndpoints;
use crate::providers::{AzureGcp, Endpoints};

/// The demo Hetzner token (64 alphanumerics, accepted only by the demo cloud).
const DEMO_HETZNER_TOKEN: &str =
    "demo0000000000000000000000000000000000000000000000000000000hcloud";
/// The demo DigitalOcean token.
const DEMO_DO_TOKEN: &str =
    "dop_v1_00000000000000000000000000000000000000000000000000000000000de770";

/// The demo AWS access key (a long-term key's shape, accepted only by the demo cloud).
const DEMO_AWS_KEY_ID: &str = "AKIALEVELRAILDEMO0001";
const DEMO_AWS_SECRET: &str = "levelrail/demo/secret/access/key/0000000000";

/// How the demo clouds behave.
#[derive(Debug, Clone, Default)]
pub struct DemoSettings {
    /// The life of every access token and AWS session the demo clouds issue (default: an
    /// hour, as the real ones).
    pub token_lifetime: Option<Duration>,
    /// Regions (GCP: zones or regions) where every server create fails with the provider's
    /// capacity error.
    pub full_regions: Vec<String>,
}

/// `--demo-full-regions` as given, trimmed, without empty entries.
pub fn demo_full_regions(given: &[String]) -> Vec<String> {
    given
        .iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

/// The running demo clouds and the agents they booted.
#[derive(Debug)]
pub struct Demo {
    /// Where the provider clients should point.
    pub endpoints: Endpoints,
    _hetzner: FakeHetznerHandle,
    _digitalocean: FakeDigitalOcean,
    _aws: FakeAwsHandle,
    azure: FakeAzureHandle,
    gcp: FakeGcpHandle,
    harness: Option<Arc<BootHarness>>,
}

impl Demo {
    /// Starts the demo clouds; servers boot through the boot harness (nodes under
    /// `<data dir>/demo-nodes`), or through `boot` when given (the real-boot tests).
    /// `settings` may shorten the life of the grants and name regions that are full.
    pub async fn start(
        data_dir: &Path,
        boot: Option<BootHook>,
        settings: DemoSettings,
    ) -> anyhow::Result<Self> {
        let DemoSettings {
            token_lifetime,
            full_regions,
        } = settings;
        let (hook, harness) = match boot {
            Some(hook) => (hook, None),
            None => {
                let harness = BootHarness::new(data_dir.join("demo-nodes"), BootOptions::default());
                (harness.hook(), Some(harness))
            }
        };
        let hetzner = FakeHetzner::start(FakeHetznerConfig {
            token: DEMO_HETZNER_TOKEN.into(),
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(2),
            full_regions: full_regions.clone(),
            ..Default::default()
        })
        .await
        .context("starting the demo Hetzner cloud")?;
        let digitalocean = FakeDigitalOcean::start(FakeDigitalOceanConfig {
            token: DEMO_DO_TOKEN.into(),
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(3),
            full_regions: full_regions.clone(),
            ..Default::default()
        })
        .await
        .context("starting the demo DigitalOcean cloud")?;
        let aws = FakeAws::start(FakeAwsConfig {
            access_keys: vec![(DEMO_AWS_KEY_ID.into(), DEMO_AWS_SECRET.into())],
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(2),
            session_lifetime: token_lifetime,
            full_regions: full_regions.clone(),
            ..Default::default()
        })
        .await
        .context("starting the demo AWS cloud")?;
        let (azure, gcp, azure_gcp) = start_azure_gcp(hook, token_lifetime, &full_regions).await?;
        if !full_regions.is_empty() {
            info!(full_regions = ?full_regions, "demo clouds refuse creates there for lack of capacity");
        }
        let endpoints = Endpoints {
            hetzner: hetzner.base_url(),
            digitalocean: digitalocean.base_url(),
            aws: AwsSettings {
                ec2_endpoint: Some(aws.endpoint()),
                sts_endpoint: Some(aws.endpoint()),
                release_timeout: Duration::from_secs(60),
                poll_interval: Duration::from_secs(1),
                ..AwsSettings::default()
            },
            azure_gcp,
        };
        info!(hetzner = %endpoints.hetzner, digitalocean = %endpoints.digitalocean, aws = %aws.endpoint(), "demo clouds running");
        Ok(Self {
            endpoints,
            _hetzner: hetzner,
            _digitalocean: digitalocean,
            _aws: aws,
            azure,
            gcp,
            harness,
        })
    }

    /// Stores the demo credentials for the demo clouds where nothing is stored yet.
    pub async fn connect(&self, credentials: &Credentials) -> anyhow::Result<()> {
        let cards = credentials.list_providers().await?;
        for (kind, token) in [
            (ProviderId::Hetzner, DEMO_HETZNER_TOKEN),
            (ProviderId::DigitalOcean, DEMO_DO_TOKEN),
        ] {
            if cards
                .iter()
                .any(|c| c.provider == kind && c.stored.is_some())
            {
                continue;
            }
            credentials
                .set_credential(CredentialInput::Token {
                    provider: kind,
                    token: SecretString::from(token),
                })
                .await?;
            info!(provider = %kind, "demo credential stored");
        }
        if !cards
            .iter()
            .any(|c| c.provider == ProviderId::Aws && c.stored.is_some())
        {
            credentials
                .set_credential(CredentialInput::Aws {
                    access_key_id: DEMO_AWS_KEY_ID.into(),
                    secret_access_key: SecretString::from(DEMO_AWS_SECRET),
                    session_token: SecretString::from(""),
                    region: "us-east-1".into(),
                    role_arn: String::new(),
                    use_ambient_credentials: false,
                })
                .await?;
            info!(provider = %ProviderId::Aws, "demo credential stored");
        }
        let azure = self.azure.config();
        let principal = serde_json::json!({
            "tenant_id": azure.tenant_id, "client_id": azure.client_id, "client_secret": azure.client_secret,
            "subscription_id": azure.subscription_id, "resource_group": azure.resource_groups[0],
        });
        for (kind, input) in [
            (
                ProviderId::Azure,
                CredentialInput::AzureJson(SecretString::from(principal.to_string())),
            ),
            (
                ProviderId::Gcp,
                CredentialInput::GcpJson(SecretString::from(self.gcp.service_account_key_json())),
            ),
        ] {
            if !cards
                .iter()
                .any(|c| c.provider == kind && c.stored.is_some())
            {
                credentials.set_credential(input).await?;
                info!(provider = %kind, "demo credential stored");
            }
        }
        Ok(())
    }

    /// Creates, in the demo Hetzner cloud, two servers (`stray-1`, `stray-2`) labelled for
    /// `control_plane` but for provisions no database here knows (`--demo-stray-server`):
    /// the sweeper lists them as orphans of unknown provisions, to adopt or delete.
    pub async fn plant_stray_server(
        &self,
        registry: &ProviderRegistry,
        control_plane: &str,
    ) -> anyhow::Result<()> {
        let (client, _) = registry
            .client(ProviderId::Hetzner, "demo stray server")
            .await
            .context("a demo Hetzner client")?;
        for name in ["stray-1", "stray-2"] {
            let provision = format!("npv_{}", uuid::Uuid::new_v4().simple());
            let server = client
                .create_server(&CreateServer {
                    name: name.into(),
                    region: "fsn1".into(),
                    size: "cx22".into(),
                    image: None,
                    // Nothing to run: no agent enrolls it.
                    user_data: "#cloud-config\n{}\n".into(),
                    ssh_public_keys: Vec::new(),
                    ssh_source_cidr: None,
                    ownership: Ownership {
                        control_plane: control_plane.to_owned(),
                        provision_id: provision.clone(),
                        node_name: name.into(),
                    },
                })
                .await
                .context("creating the demo's stray server")?;
            info!(server = %server.id, %provision, "demo stray server created");
        }
        Ok(())
    }

    /// How many agents the demo's boots have started.
    pub fn agent_count(&self) -> usize {
        self.harness.as_ref().map_or(0, |h| h.agent_count())
    }

    /// The boot harness, unless the servers boot elsewhere.
    pub fn harness(&self) -> Option<&Arc<BootHarness>> {
        self.harness.as_ref()
    }
}

/// The demo Azure (HTTPS with its own CA) and GCP clouds, and the endpoints pointing at them.
async fn start_azure_gcp(
    hook: BootHook,
    token_lifetime: Option<Duration>,
    full_regions: &[String],
) -> anyhow::Result<(FakeAzureHandle, FakeGcpHandle, AzureGcp)> {
    let azure_defaults = FakeAzureConfig::default();
    let azure = FakeAzure::start(FakeAzureConfig {
        boot_hook: Some(hook.clone()),
        state_step: Duration::from_secs(2),
        token_lifetime: token_lifetime.unwrap_or(azure_defaults.token_lifetime),
        full_regions: full_regions.to_vec(),
        ..azure_defaults
    })
    .await
    .context("starting the demo Azure cloud")?;
    let gcp_defaults = FakeGcpConfig::default();
    let gcp = FakeGcp::start(FakeGcpConfig {
        boot_hook: Some(hook),
        state_step: Duration::from_secs(2),
        token_lifetime: token_lifetime.unwrap_or(gcp_defaults.token_lifetime),
        full_regions: full_regions.to_vec(),
        ..gcp_defaults
    })
    .await
    .context("starting the demo GCP cloud")?;
    let urls = AzureGcpEndpoints {
        azure_authority_url: azure.authority_url(),
        azure_arm_url: azure.base_url(),
        gcp_token_url: gcp.token_url(),
        gcp_sts_url: gcp.sts_url(),
        gcp_iam_credentials_url: gcp.iam_credentials_url(),
        gcp_compute_url: gcp.compute_url(),
        gcp_resource_manager_url: gcp.resource_manager_url(),
        cloud_ca_file: None,
    };
    info!(azure = %urls.azure_arm_url, gcp = %urls.gcp_compute_url, "demo Azure and GCP clouds running");
    let endpoints = AzureGcp {
        urls,
        ca_pem: Some(azure.ca_pem().to_owned()),
    };
    Ok((azure, gcp, endpoints))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_regions_are_trimmed_and_empty_entries_dropped() {
        let given = [" fsn1".to_owned(), String::new(), "nyc1 ".to_owned()];
        assert_eq!(demo_full_regions(&given), ["fsn1", "nyc1"]);
    }
}
