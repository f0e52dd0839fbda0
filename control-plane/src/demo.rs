//! Demo mode (`levelrail serve --demo`): a simulated cloud for every cloud Levelrail
//! supports (`levelrail_sim::demo`) runs in-process, with demo credentials stored for them,
//! so a newcomer can run the whole Add node wizard without a cloud account. Each server that reaches `running` boots through
//! the boot harness (`levelrail_sim::boot`): its user-data runs as cloud-init would run
//! it, so the node downloads the control plane's agent binary over TLS, checks its SHA-256,
//! reports its steps with the real `report-progress` script and starts the downloaded
//! binary, which enrolls.
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use levelrail_clouds::cloud::Settings;
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_clouds::{CreateServer, Ownership};
use levelrail_credentials::app::Credentials;
use levelrail_credentials::model::ProviderId;
use levelrail_provisioner::app::Nodes;
use levelrail_provisioner::model::{NodeName, Role};
use levelrail_sim::boot::{BootHarness, BootOptions};
use levelrail_sim::demo::{DemoCloud, DemoOptions};
use levelrail_sim::fakes::BootHook;
use tracing::info;

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
    pub settings: Settings,
    clouds: Vec<DemoCloud>,
    harness: Option<Arc<BootHarness>>,
}

impl Demo {
    /// Starts a demo cloud for every cloud Levelrail supports; servers boot through the
    /// boot harness (nodes under `<data dir>/demo-nodes`), or through `boot` when given (the
    /// real-boot tests). `settings` may shorten the life of the grants and name regions
    /// that are full.
    pub async fn start(
        data_dir: &Path,
        boot: Option<BootHook>,
        settings: DemoSettings,
    ) -> anyhow::Result<Self> {
        let (hook, harness) = match boot {
            Some(hook) => (hook, None),
            None => {
                let harness = BootHarness::new(data_dir.join("demo-nodes"), BootOptions::default());
                (harness.hook(), Some(harness))
            }
        };
        let options = DemoOptions {
            boot_hook: hook,
            token_lifetime: settings.token_lifetime,
            full_regions: settings.full_regions,
        };
        // The demo clouds answer at once: a client waiting on one checks every second.
        let mut cloud_settings = Settings::default();
        cloud_settings.poll_interval = Some(Duration::from_secs(1));
        cloud_settings.wait_limit = Some(Duration::from_secs(60));
        let mut clouds = Vec::new();
        for id in ProviderId::ALL {
            let cloud = levelrail_sim::demo::start(id, &options)
                .await
                .with_context(|| format!("starting the demo {} cloud", id.display_name()))?;
            for (key, url) in &cloud.urls {
                cloud_settings.set_url(id, key, url.clone())?;
            }
            if let Some(pem) = &cloud.ca_pem {
                let roots = cloud_settings.extra_ca_pem.get_or_insert_with(String::new);
                roots.push_str(pem);
            }
            info!(provider = %id, urls = ?cloud.urls, "demo cloud running");
            clouds.push(cloud);
        }
        if !options.full_regions.is_empty() {
            info!(full_regions = ?options.full_regions, "demo clouds refuse creates there for lack of capacity");
        }
        Ok(Self {
            settings: cloud_settings,
            clouds,
            harness,
        })
    }

    /// Stores each demo cloud's credential where nothing is stored yet, as a client would
    /// send it.
    pub async fn connect(&self, credentials: &Credentials) -> anyhow::Result<()> {
        let cards = credentials.list_providers().await?;
        for cloud in &self.clouds {
            if cards
                .iter()
                .any(|c| c.provider == cloud.id && c.stored.is_some())
            {
                continue;
            }
            let input = levelrail_credentials::grpc::credential_input(cloud.credential.clone())
                .map_err(|e| anyhow::anyhow!("the demo {} credential: {e}", cloud.id))?;
            credentials.set_credential(input).await?;
            info!(provider = %cloud.id, "demo credential stored");
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

/// Enrolls `count` nodes named `fleet-00001`, `fleet-00002`, … (`--demo-fleet`) the way
/// agents enrolled by hand do: a join token bound to the name, a key of its own and a
/// certificate signing request redeemed through [`Nodes::enroll`]. Every fourth is a build
/// node. Names enrolled by an earlier start are skipped; 32 enroll at once.
pub async fn enroll_fleet(nodes: &Nodes, count: u32) -> anyhow::Result<()> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let taken: std::collections::HashSet<String> = nodes
        .list_nodes()
        .await?
        .into_iter()
        .map(|n| n.name.to_string())
        .collect();
    let started = std::time::Instant::now();
    let wanted: Vec<u32> = (1..=count)
        .filter(|i| !taken.contains(&fleet_name(*i)))
        .collect();
    let enrolled = wanted.len();
    futures::stream::iter(wanted)
        .map(|i| enroll_one(nodes, i))
        .buffer_unordered(32)
        .try_collect::<()>()
        .await?;
    info!(
        enrolled,
        of = count,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "demo fleet enrolled"
    );
    Ok(())
}

fn fleet_name(i: u32) -> String {
    format!("fleet-{i:05}")
}

async fn enroll_one(nodes: &Nodes, i: u32) -> anyhow::Result<()> {
    use secrecy::ExposeSecret as _;
    let name = NodeName::parse(&fleet_name(i)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let role = if i.is_multiple_of(4) {
        Role::Build
    } else {
        Role::General
    };
    let (_, token) = nodes
        .create_join_token(None, Some(name.clone()), None, role)
        .await?;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let csr = rcgen::CertificateParams::new(Vec::<String>::new())?
        .serialize_request(&key)?
        .pem()?;
    let address = format!("10.{}.{}.{}", i >> 16 & 0xff, i >> 8 & 0xff, i & 0xff);
    nodes
        .enroll(
            token.expose_secret(),
            name,
            vec![address],
            crate::agent_binaries::AGENT_VERSION.to_owned(),
            &csr,
        )
        .await
        .with_context(|| format!("enrolling demo node {}", fleet_name(i)))?;
    Ok(())
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
