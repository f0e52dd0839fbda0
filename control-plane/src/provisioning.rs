//! Assembling the provisioner in all-in-one mode: one store for nodes and provisions (name
//! claims and enrollment share transactions), the sealing key and control-plane id in the
//! data directory, the enrollment → provision event hub, teardown for
//! `DeleteNode{destroy_server}`, the recovery loop that resumes in-flight provisions, and
//! the orphan sweeper.
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use levelrail_clouds::catalog::{CatalogCache, CatalogTtl};
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_provisioner::app::workflow::{ProvisionEvents, ProvisionTeardown};
use levelrail_provisioner::app::{
    AgentAddrPolicy, DEFAULT_PROVISION_TIMEOUT, Nodes, ProgressAuthority, Provisioner,
    ProvisionerConfig, ProvisionerDeps, WorkflowTuning,
};
use levelrail_provisioner::cloudinit::{AgentImage, AgentSource};
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::enroll::sealing_key;
use levelrail_provisioner::model::ports::{NodeStore, ProvisionStore};
use levelrail_provisioner::model::provision::{host_port, parse_go_duration};
use levelrail_provisioner::store::open_provisioner_store;
use secrecy::ExposeSecret as _;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::agent_binaries::AgentBinaries;
use crate::config::ServeConfig;

/// The assembled provisioner side.
#[derive(Debug)]
pub struct Provisioning {
    /// Nodes, join tokens, enrollment.
    pub nodes: Arc<Nodes>,
    /// Provisions and their workflow.
    pub provisioner: Arc<Provisioner>,
    /// The recovery loop (resumes in-flight provisions, also those of a dead replica).
    pub recovery: JoinHandle<()>,
    /// The orphan sweeper (retries orphans' deletion, lists labelled servers).
    pub sweeper: JoinHandle<()>,
    /// The agent listener's address as new servers dial it (`host:port`).
    pub advertised: String,
}

/// Builds the provisioner side.
pub async fn build(
    cfg: &ServeConfig,
    ca: Arc<ControlPlaneCa>,
    registry: Arc<ProviderRegistry>,
    agent_addr: SocketAddr,
    binaries: &AgentBinaries,
) -> anyhow::Result<Provisioning> {
    let advertise = advertised_agent_addr(cfg, agent_addr)?;
    let agent = agent_source(cfg, binaries, &advertise)?;
    let policy = if cfg.demo || cfg.allow_loopback_agent_advertise {
        AgentAddrPolicy::AllowLoopback
    } else {
        AgentAddrPolicy::Routable
    };
    if let Err(e) = policy.check(&advertise) {
        warn!(reason = %e, "provisioning is refused until the agent address is reachable");
    }
    let store = open_provisioner_store(&dsn(cfg))
        .await
        .context("opening the provisioner database")?;
    let node_store: Arc<dyn NodeStore> = store.clone();
    let provision_store: Arc<dyn ProvisionStore> = store.clone();
    let seal_path = cfg.data_dir.join("provision-seal.key");
    let sealing_key =
        sealing_key::load_or_create(&seal_path).context("the provision sealing key")?;
    // The same key again: it also derives the progress credentials the agent listener checks.
    let progress_key =
        sealing_key::load_or_create(&seal_path).context("the provision sealing key")?;
    let control_plane_id = control_plane_id(&cfg.data_dir)?;
    let events = Arc::new(ProvisionEvents::new());
    let teardown = Arc::new(ProvisionTeardown::new(
        provision_store.clone(),
        registry.clone(),
        control_plane_id.clone(),
    ));
    let nodes = Arc::new(
        Nodes::new(node_store, ca)
            .with_enrollment_listener(events.clone())
            .with_server_teardown(teardown)
            .with_progress_authority(ProgressAuthority::new(
                progress_key,
                provision_store.clone(),
            )),
    );
    let timeout = match &cfg.provision_timeout {
        Some(t) => {
            parse_go_duration(t).map_err(|e| anyhow::anyhow!("APP_NODE_PROVISION_TIMEOUT: {e}"))?
        }
        None => DEFAULT_PROVISION_TIMEOUT,
    };
    let provisioner = Arc::new(Provisioner::new(ProvisionerDeps {
        store: provision_store,
        orphans: store.clone(),
        nodes: nodes.clone(),
        registry,
        catalog: CatalogCache::new(CatalogTtl::default()),
        events,
        clock: Arc::new(time::OffsetDateTime::now_utc),
        config: ProvisionerConfig {
            control_plane_id,
            default_control_plane_addr: Some(advertise.clone()),
            agent_addr_policy: policy,
            agent,
            timeout,
            progress_url: format!("https://{advertise}/v1/provision-progress"),
            sealing_key,
            tuning: WorkflowTuning {
                sweep_unknown_servers: cfg.sweep_unknown_servers,
                ..WorkflowTuning::default()
            },
        },
    }));
    let recovery = provisioner
        .workflow()
        .spawn_recovery(Duration::from_secs(30));
    let sweeper = provisioner.workflow().sweeper().spawn();
    info!(agent_addr = %advertise, timeout_s = timeout.as_secs(), "provisioner ready");
    Ok(Provisioning {
        nodes,
        provisioner,
        recovery,
        sweeper,
        advertised: advertise,
    })
}

/// The database: PostgreSQL when `DATABASE_URL` names one (each service keeps its own
/// migration table), otherwise a SQLite file in the data directory.
fn dsn(cfg: &ServeConfig) -> String {
    match &cfg.database_url {
        Some(url) if url.expose_secret().starts_with("postgres") => url.expose_secret().to_owned(),
        _ => format!("sqlite://{}", cfg.data_dir.join("provisioner.db").display()),
    }
}

/// The address new VMs dial: `--agent-advertise` (validated), else the bound agent
/// address as it is (a wildcard or loopback address is then refused per provision, naming
/// `--agent-advertise`).
fn advertised_agent_addr(cfg: &ServeConfig, bound: SocketAddr) -> anyhow::Result<String> {
    match &cfg.agent_advertise {
        Some(a) => {
            host_port(a.trim()).map_err(|e| anyhow::anyhow!("--agent-advertise: {}", e.message))
        }
        None => Ok(bound.to_string()),
    }
}

/// What the nodes run: the digest-pinned image of `--agent-image`, else the served
/// binaries, of which there must be at least one.
fn agent_source(
    cfg: &ServeConfig,
    binaries: &AgentBinaries,
    advertise: &str,
) -> anyhow::Result<AgentSource> {
    if let Some(image) = &cfg.agent_image {
        let image = AgentImage::parse(image).map_err(|e| anyhow::anyhow!("--agent-image: {e}"))?;
        return Ok(AgentSource::Image(image));
    }
    anyhow::ensure!(
        !binaries.is_empty(),
        "no levelrail-agent binary to serve to new nodes: none was given with --agent-binary \
         PATH and there is none beside this executable (build it with `cargo build -p \
         levelrail-agent`), or run a digest-pinned image with --agent-image \
         repository@sha256:<digest>"
    );
    Ok(AgentSource::Binary(binaries.download(advertise)))
}

/// A stable id for this control plane, created once in the data directory; it goes into
/// the labels of everything it creates at a provider.
pub(crate) fn control_plane_id(dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("control-plane.id");
    if let Ok(id) = std::fs::read_to_string(&path) {
        let id = id.trim().to_owned();
        if !id.is_empty() {
            return Ok(id);
        }
    }
    let id = format!("cp-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    std::fs::write(&path, format!("{id}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(id)
}
