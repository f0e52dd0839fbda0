//! Assembling the provisioner: one store for nodes and provisions (name claims and
//! enrollment share transactions), the CA, sealing key and control-plane id (files of the
//! data directory all-in-one, shared through the database by replicas), the enrollment → provision event hub, teardown for
//! `DeleteNode{destroy_server}`, the recovery loop that resumes in-flight provisions, and
//! the orphan sweeper.
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use levelrail_clouds::catalog::{CatalogCache, CatalogTtl};
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_credentials::app::Credentials;
use levelrail_provisioner::app::workflow::{ProvisionEvents, ProvisionTeardown};
use levelrail_provisioner::app::{
    AgentAddrPolicy, DEFAULT_PROVISION_TIMEOUT, Nodes, ProgressAuthority, Provisioner,
    ProvisionerConfig, ProvisionerDeps, WorkflowTuning,
};
use levelrail_provisioner::cloudinit::{AgentImage, AgentSource};
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::enroll::ca::KeySealer;
use levelrail_provisioner::enroll::{sealing_key, shared};
use levelrail_provisioner::model::ports::{NodeStore, ProvisionStore, ProvisionerStore};
use levelrail_provisioner::model::provision::SealingKey;
use levelrail_provisioner::model::provision::{host_port, parse_go_duration};
use levelrail_provisioner::store::open_provisioner_store;
use secrecy::ExposeSecret as _;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::agent_binaries::AgentBinaries;
use crate::config::{NodeArgs, StorageArgs};

/// The provisioner's own state: its store, and what every replica of it must share (the
/// node CA, the sealing key of join tokens and progress credentials, the control-plane id).
#[derive(Debug)]
pub struct ProvisionerState {
    /// Nodes, provisions, orphans: one database.
    pub store: Arc<dyn ProvisionerStore>,
    /// The node CA.
    pub ca: Arc<ControlPlaneCa>,
    /// Seals join tokens at rest and derives progress credentials.
    pub sealing_key: SealingKey,
    /// Labels everything this control plane creates at a provider.
    pub control_plane_id: String,
}

impl ProvisionerState {
    /// All-in-one: the database of `storage` (SQLite in the data directory by default),
    /// the CA, sealing key and id as files of the data directory, the CA's key sealed with
    /// the master keyring of `credentials`.
    pub async fn in_data_dir(
        storage: &StorageArgs,
        credentials: &Credentials,
    ) -> anyhow::Result<Self> {
        let (ca, created) = ControlPlaneCa::load_or_create_sealed(
            &storage.data_dir,
            &MasterKeySealer(credentials),
        )?;
        if created {
            info!(fingerprint = %ca.fingerprint(), "created the control-plane CA");
        }
        let seal_path = storage.data_dir.join("provision-seal.key");
        Ok(Self {
            store: open_store(storage).await?,
            ca: Arc::new(ca),
            sealing_key: sealing_key::load_or_create(&seal_path)
                .context("the provision sealing key")?,
            control_plane_id: control_plane_id(&storage.data_dir)?,
        })
    }

    /// A replica: the shared database, the sealing key file every replica is given (it
    /// must exist), and the CA and id the first replica stored in the database.
    pub async fn shared(storage: &StorageArgs, sealing_key_file: &Path) -> anyhow::Result<Self> {
        let key = sealing_key::load(sealing_key_file).with_context(|| {
            format!(
                "--sealing-key-file {}: create it once for every replica with \
                 `head -c 32 /dev/urandom > FILE` (mode 0600)",
                sealing_key_file.display()
            )
        })?;
        let store = open_store(storage).await?;
        let (ca, created) = shared::node_ca(store.as_ref(), &key).await?;
        if created {
            info!(fingerprint = %ca.fingerprint(), "created the control-plane CA in the shared database");
        }
        let control_plane_id = shared::control_plane_id(store.as_ref()).await?;
        Ok(Self {
            store,
            ca: Arc::new(ca),
            sealing_key: key,
            control_plane_id,
        })
    }
}

/// The CA key sealed with the credentials service's master keyring, as a sealed file of
/// the data directory.
struct MasterKeySealer<'a>(&'a Credentials);

impl KeySealer for MasterKeySealer<'_> {
    fn open(&self, name: &str) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, String> {
        self.0.read_sealed_file(name).map_err(|e| e.to_string())
    }

    fn seal(&self, name: &str, key: &[u8]) -> Result<(), String> {
        self.0
            .write_sealed_file(name, key)
            .map_err(|e| e.to_string())
    }
}

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
    /// The change feed of a shared database (none for SQLite).
    pub feed: Option<JoinHandle<()>>,
    /// The agent listener's address as new servers dial it (`host:port`).
    pub advertised: String,
}

/// Builds the provisioner side. `allow_loopback`: a loopback agent address is accepted
/// (the demo, a lab).
pub async fn build(
    cfg: &NodeArgs,
    allow_loopback: bool,
    state: ProvisionerState,
    registry: Arc<ProviderRegistry>,
    agent_addr: SocketAddr,
    binaries: &AgentBinaries,
) -> anyhow::Result<Provisioning> {
    let advertise = advertised_agent_addr(cfg, agent_addr)?;
    let agent = agent_source(cfg, binaries, &advertise)?;
    let policy = if allow_loopback || cfg.allow_loopback_agent_advertise {
        AgentAddrPolicy::AllowLoopback
    } else {
        AgentAddrPolicy::Routable
    };
    if let Err(e) = policy.check(&advertise) {
        warn!(reason = %e, "provisioning is refused until the agent address is reachable");
    }
    let ProvisionerState {
        store,
        ca,
        sealing_key,
        control_plane_id,
    } = state;
    let node_store: Arc<dyn NodeStore> = store.clone();
    let provision_store: Arc<dyn ProvisionStore> = store.clone();
    // The same key again: it also derives the progress credentials the agent listener checks.
    let progress_key = sealing_key.clone();
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
    let lease_ttl =
        parse_go_duration(&cfg.lease_ttl).map_err(|e| anyhow::anyhow!("--lease-ttl: {e}"))?;
    anyhow::ensure!(
        lease_ttl >= Duration::from_secs(1),
        "--lease-ttl: must be at least 1s"
    );
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
                lease_ttl,
                sweep_unknown_servers: cfg.sweep_unknown_servers,
                max_in_flight: cfg.max_provisions_in_flight as usize,
                ..WorkflowTuning::default()
            },
        },
    }));
    let workflow = provisioner.workflow();
    let feed = workflow
        .spawn_change_feed()
        .await
        .context("opening the database's change feed")?;
    // A dead replica's provisions are resumed once their leases expire.
    let recovery = workflow.spawn_recovery(lease_ttl.min(Duration::from_secs(30)));
    let sweeper = workflow.sweeper().spawn();
    info!(agent_addr = %advertise, timeout_s = timeout.as_secs(), change_feed = feed.is_some(), "provisioner ready");
    Ok(Provisioning {
        nodes,
        provisioner,
        recovery,
        sweeper,
        feed,
        advertised: advertise,
    })
}

/// Opens the provisioner's database.
async fn open_store(storage: &StorageArgs) -> anyhow::Result<Arc<dyn ProvisionerStore>> {
    open_provisioner_store(&dsn(storage)?)
        .await
        .context("opening the provisioner database")
}

/// The database: PostgreSQL when `DATABASE_URL` names one (each service keeps its own
/// migration table), otherwise a SQLite file in the data directory.
fn dsn(cfg: &StorageArgs) -> anyhow::Result<String> {
    Ok(match cfg.database_url()? {
        Some(url) if url.expose_secret().starts_with("postgres") => url.expose_secret().to_owned(),
        _ => format!("sqlite://{}", cfg.data_dir.join("provisioner.db").display()),
    })
}

/// The address new VMs dial: `--agent-advertise` (validated), else the bound agent
/// address as it is (a wildcard or loopback address is then refused per provision, naming
/// `--agent-advertise`).
fn advertised_agent_addr(cfg: &NodeArgs, bound: SocketAddr) -> anyhow::Result<String> {
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
    cfg: &NodeArgs,
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
/// the labels of everything it creates at a provider. A file that is there but cannot be
/// read, or holds no valid id, is refused and left as it is: a new id would disown every
/// server made under the old one.
pub(crate) fn control_plane_id(dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("control-plane.id");
    match std::fs::read_to_string(&path) {
        Ok(id) => {
            let id = id.trim();
            return match shared::control_plane_id_problem(id) {
                None => Ok(id.to_owned()),
                Some(problem) => Err(anyhow::anyhow!(
                    "{}: {problem} (it labels every server at every provider; servers already \
                     created carry the old id, so restore it rather than pick a new one)",
                    path.display()
                )),
            };
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("reading {}", path.display()));
        }
    }
    let id = shared::new_control_plane_id();
    std::fs::write(&path, format!("{id}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_plane_id_is_created_once_and_a_broken_one_is_refused_by_file() {
        let dir = tempfile::tempdir().expect("dir");
        let id = control_plane_id(dir.path()).expect("created");
        assert_eq!(control_plane_id(dir.path()).expect("read again"), id);
        let path = dir.path().join("control-plane.id");
        std::fs::write(&path, "prod.eu\n").expect("edited");
        let e = format!("{:#}", control_plane_id(dir.path()).expect_err("refused"));
        assert!(
            e.contains("control-plane.id") && e.contains("character 5 is '.'"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).expect("kept"),
            "prod.eu\n",
            "the operator's file is left as it was"
        );
        for (content, why) in [(&b" \n"[..], "it is empty"), (&[0xff, 0xfe][..], "reading")] {
            std::fs::write(&path, content).expect("edited");
            let e = format!("{:#}", control_plane_id(dir.path()).expect_err("refused"));
            assert!(e.contains("control-plane.id") && e.contains(why), "{e}");
            assert_eq!(std::fs::read(&path).expect("kept"), content);
        }
    }
}
