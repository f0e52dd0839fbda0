//! Demo mode (`levelrail serve --demo`): the simulated Hetzner, DigitalOcean, AWS (EC2 +
//! STS), Azure (AAD + ARM, over HTTPS with a demo CA) and GCP (OAuth + Compute) clouds run
//! in-process, with demo credentials stored for them, so a newcomer can run the whole Add
//! node wizard without a cloud account. A simulated boot reads the user-data the server
//! was created with, reports the cloud-init progress steps to the control plane, and starts
//! a real `levelrail-agent` process with the env file the cloud-init would have written.
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use levelrail_credentials::domain::{CredentialInput, Credentials, ProviderKind};
use levelrail_provisioner::cloudinit::{self, AgentBootstrap};
use levelrail_provisioner::providers::aws::AwsSettings;
use levelrail_tests::fakes::aws::{FakeAws, FakeAwsConfig, FakeAwsHandle};
use levelrail_tests::fakes::azure::{FakeAzure, FakeAzureConfig, FakeAzureHandle};
use levelrail_tests::fakes::digitalocean::{FakeDigitalOcean, FakeDigitalOceanConfig};
use levelrail_tests::fakes::gcp::{FakeGcp, FakeGcpConfig, FakeGcpHandle};
use levelrail_tests::fakes::hetzner::{FakeHetzner, FakeHetznerConfig, FakeHetznerHandle};
use levelrail_tests::fakes::{BootEvent, BootHook};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::process::{Child, Command};
use tracing::{info, warn};

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
/// Its secret.
const DEMO_AWS_SECRET: &str = "levelrail/demo/secret/access/key/0000000000";

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
    agents: Arc<Mutex<Vec<Child>>>,
}

impl Demo {
    /// Starts both demo clouds; booted servers run agents that dial `agent_addr`.
    pub async fn start(data_dir: &Path, agent_addr: String) -> anyhow::Result<Self> {
        let agents = Arc::new(Mutex::new(Vec::new()));
        let hook = boot_hook(data_dir.join("demo-nodes"), agent_addr, agents.clone());
        let hetzner = FakeHetzner::start(FakeHetznerConfig {
            token: DEMO_HETZNER_TOKEN.into(),
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(2),
            ..Default::default()
        })
        .await
        .context("starting the demo Hetzner cloud")?;
        let digitalocean = FakeDigitalOcean::start(FakeDigitalOceanConfig {
            token: DEMO_DO_TOKEN.into(),
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(3),
            ..Default::default()
        })
        .await
        .context("starting the demo DigitalOcean cloud")?;
        let aws = FakeAws::start(FakeAwsConfig {
            access_keys: vec![(DEMO_AWS_KEY_ID.into(), DEMO_AWS_SECRET.into())],
            boot_hook: Some(hook.clone()),
            state_step: Duration::from_secs(2),
            ..Default::default()
        })
        .await
        .context("starting the demo AWS cloud")?;
        let (azure, gcp, azure_gcp) = start_azure_gcp(hook).await?;
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
            agents,
        })
    }

    /// Stores the demo credentials for the demo clouds where nothing is stored yet.
    pub async fn connect(&self, credentials: &Credentials) -> anyhow::Result<()> {
        let cards = credentials.list_providers().await?;
        for (kind, token) in [
            (ProviderKind::Hetzner, DEMO_HETZNER_TOKEN),
            (ProviderKind::DigitalOcean, DEMO_DO_TOKEN),
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
            .any(|c| c.provider == ProviderKind::Aws && c.stored.is_some())
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
            info!(provider = %ProviderKind::Aws, "demo credential stored");
        }
        let azure = self.azure.config();
        let principal = serde_json::json!({
            "tenant_id": azure.tenant_id, "client_id": azure.client_id, "client_secret": azure.client_secret,
            "subscription_id": azure.subscription_id, "resource_group": azure.resource_groups[0],
        });
        for (kind, input) in [
            (
                ProviderKind::Azure,
                CredentialInput::AzureJson(SecretString::from(principal.to_string())),
            ),
            (
                ProviderKind::Gcp,
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

    /// How many agent processes the demo has started.
    pub fn agent_count(&self) -> usize {
        self.agents.lock().map(|a| a.len()).unwrap_or(0)
    }
}

/// The demo Azure (HTTPS with its own CA) and GCP clouds, and the endpoints pointing at them.
async fn start_azure_gcp(
    hook: BootHook,
) -> anyhow::Result<(FakeAzureHandle, FakeGcpHandle, AzureGcp)> {
    let azure = FakeAzure::start(FakeAzureConfig {
        boot_hook: Some(hook.clone()),
        state_step: Duration::from_secs(2),
        ..Default::default()
    })
    .await
    .context("starting the demo Azure cloud")?;
    let gcp = FakeGcp::start(FakeGcpConfig {
        boot_hook: Some(hook),
        state_step: Duration::from_secs(2),
        ..Default::default()
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
        cloud_ca_file: None,
    };
    info!(azure = %urls.azure_arm_url, gcp = %urls.gcp_compute_url, "demo Azure and GCP clouds running");
    let endpoints = AzureGcp {
        urls,
        ca_pem: Some(azure.ca_pem().to_owned()),
    };
    Ok((azure, gcp, endpoints))
}

fn boot_hook(dir: PathBuf, agent_addr: String, agents: Arc<Mutex<Vec<Child>>>) -> BootHook {
    let runtime = tokio::runtime::Handle::current();
    Arc::new(move |event: BootEvent| {
        let (dir, addr, agents) = (dir.clone(), agent_addr.clone(), agents.clone());
        runtime.spawn(async move {
            let name = event.name.clone();
            if let Err(e) = boot(&dir, &addr, event, &agents).await {
                warn!(server = %name, error = format!("{e:#}"), "simulated boot failed");
            }
        });
    })
}

/// What cloud-init would do on the VM, done locally.
async fn boot(
    dir: &Path,
    agent_addr: &str,
    event: BootEvent,
    agents: &Mutex<Vec<Child>>,
) -> anyhow::Result<()> {
    let boot =
        cloudinit::extract_agent_bootstrap(&event.user_data).context("reading the user-data")?;
    let node_dir = dir.join(format!("{}-{}", event.name, event.server_id));
    std::fs::create_dir_all(&node_dir)?;
    let progress = progress_client(&boot)?;
    report(&progress, &boot, "docker_ready").await;
    report(&progress, &boot, "image_pulled").await;
    let env = write_env(&node_dir, agent_addr, &boot)?;
    let agent = agent_binary()?;
    let log = std::fs::File::create(node_dir.join("agent.log"))?;
    let child = Command::new(agent)
        .arg("--env-file")
        .arg(&env)
        .env_remove("APP_JOIN_TOKEN")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting levelrail-agent")?;
    info!(server = %event.server_id, name = %event.name, "demo agent started");
    if let Ok(mut a) = agents.lock() {
        a.push(child);
    }
    report(&progress, &boot, "agent_started").await;
    Ok(())
}

/// The env file as cloud-init writes it, with paths local to this machine.
fn write_env(dir: &Path, agent_addr: &str, boot: &AgentBootstrap) -> anyhow::Result<PathBuf> {
    let token_path = dir.join("join-token");
    levelrail_provisioner::enroll::ca::write_private(
        &token_path,
        boot.join_token.expose_secret().as_bytes(),
    )?;
    let mut lines = String::from("# written by the demo cloud's simulated cloud-init\n");
    for (k, v) in &boot.env {
        let v = match k.as_str() {
            "APP_JOIN_TOKEN_FILE" => token_path.display().to_string(),
            "APP_AGENT_IDENTITY_FILE" => dir.join("data/identity.json").display().to_string(),
            "APP_CONTROL_PLANE_ADDR" => agent_addr.to_owned(),
            _ => v.clone(),
        };
        lines.push_str(&format!("{k}={v}\n"));
    }
    let env = dir.join("agent.env");
    levelrail_provisioner::enroll::ca::write_private(&env, lines.as_bytes())?;
    Ok(env)
}

fn progress_client(boot: &AgentBootstrap) -> anyhow::Result<reqwest::Client> {
    let ca = reqwest::Certificate::from_pem(boot.ca_pem.as_bytes())?;
    Ok(reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(10))
        .build()?)
}

/// Posts one progress step like the document's `report-progress` script; never fails the
/// boot.
async fn report(client: &reqwest::Client, boot: &AgentBootstrap, step: &str) {
    let result = client
        .post(&boot.progress_url)
        .bearer_auth(boot.join_token.expose_secret())
        .json(&serde_json::json!({ "step": step }))
        .send()
        .await;
    match result {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => warn!(
            step,
            status = r.status().as_u16(),
            "progress report refused"
        ),
        Err(e) => warn!(step, error = %e, "progress report failed"),
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
}

/// `levelrail-agent` next to this binary.
fn agent_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .context("binary directory")?
        .join("levelrail-agent");
    anyhow::ensure!(
        path.exists(),
        "{} not found: build it with `cargo build -p levelrail-agent`",
        path.display()
    );
    Ok(path)
}
