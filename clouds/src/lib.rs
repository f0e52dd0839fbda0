//! Cloud providers behind one object-safe trait. One module per cloud (`hetzner`,
//! `digitalocean`, …) on top of the shared HTTP layer in `http.rs` (timeouts, rate limits,
//! retries, error classification).
use levelrail_types::{CpuArch, PermissionCheck};
use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;

pub mod aws;
pub mod azure;
pub mod catalog;
pub mod cloud;
pub mod digitalocean;
pub mod error;
pub mod gcp;
pub mod hetzner;
pub mod http;
pub mod pricing;
pub mod ratelimit;
pub mod registry;
mod ssh;

pub use error::{ErrorKind, ProviderError, Reason};
pub use pricing::{Price, Pricing};

pub use levelrail_types::ProviderId;

use cloud::{Cloud, Settings};
use registry::Clients;

/// The description of `id`: the one table of clouds, an exhaustive `match`, so a new
/// variant is refused until its cloud is listed here.
pub fn cloud_of(id: ProviderId) -> &'static Cloud {
    match id {
        ProviderId::Hetzner => &hetzner::CLOUD,
        ProviderId::DigitalOcean => &digitalocean::CLOUD,
        ProviderId::Aws => &aws::CLOUD,
        ProviderId::Azure => &azure::CLOUD,
        ProviderId::Gcp => &gcp::CLOUD,
    }
}

/// Every cloud, in card order.
pub fn all_clouds() -> impl Iterator<Item = &'static Cloud> {
    ProviderId::ALL.into_iter().map(cloud_of)
}

/// A client for every cloud, at the endpoints of `settings`.
pub fn clients(settings: &Settings) -> Clients {
    all_clouds().fold(Clients::default(), |clients, c| {
        clients.with(c.id, (c.spec)(settings))
    })
}

/// A region / location / zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Provider id (`fsn1`, `nyc3`).
    pub id: String,
    /// Human name.
    pub name: String,
}

/// A server size available in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    /// Provider id (`cx22`, `s-1vcpu-1gb`).
    pub id: String,
    /// Human name.
    pub name: String,
    /// Virtual CPUs.
    pub vcpus: u32,
    /// Memory in MiB.
    pub memory_mb: u32,
    /// Root disk in GB (0 when not fixed by the size).
    pub disk_gb: u32,
    /// What it costs in the region, or why that is not known.
    pub pricing: Pricing,
    /// The CPU architecture of the size's machines.
    pub architecture: CpuArch,
    /// Why a node of this size cannot be provisioned here; `None` when it can. The provider
    /// sets it for what the cloud says (Azure: restricted for the subscription, or unable to
    /// boot the image's generation); the provisioner adds "no agent binary for its
    /// architecture".
    pub unavailable_reason: Option<String>,
}

/// Labels / tags identifying what Levelrail created and for whom.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ownership {
    /// Identifies this control plane (several may share one cloud project).
    pub control_plane: String,
    /// The provision id (`npv_…`): the idempotency key of the create, and what a delete
    /// finds the provision's resources by. Required: every create and delete refuses an
    /// empty one ([`Ownership::provision`]).
    pub provision_id: String,
    pub node_name: String,
}

impl Ownership {
    /// The provision id, refused for `provider` when empty: a create needs it as its
    /// idempotency key and a delete to find what the provision left.
    pub fn provision(&self, provider: ProviderId) -> Result<&str, ProviderError> {
        if self.provision_id.trim().is_empty() {
            return Err(ProviderError::new(
                provider,
                ErrorKind::InvalidRequest,
                "invalid_input",
                "a provision id is required: it is the idempotency key of the create and finds what the provision left",
            ));
        }
        Ok(&self.provision_id)
    }

    /// Key/value pairs for providers with labels (`levelrail.io/...` keys sanitised per
    /// provider by the client).
    pub fn labels(&self) -> BTreeMap<&'static str, &str> {
        BTreeMap::from([
            ("levelrail-control-plane", self.control_plane.as_str()),
            ("levelrail-provision", self.provision_id.as_str()),
            ("levelrail-node", self.node_name.as_str()),
        ])
    }
}

/// What to create.
#[derive(Clone, PartialEq, Eq)]
pub struct CreateServer {
    /// Server name (validated node name).
    pub name: String,
    /// Region id.
    pub region: String,
    /// Size id.
    pub size: String,
    /// Image override; `None` uses the provider's Ubuntu 24.04 default.
    pub image: Option<String>,
    /// The cloud-init document. Not secret by the provider's model (readable through its
    /// metadata), but it carries a join token, so it is never logged.
    pub user_data: String,
    /// OpenSSH public keys for the default user (no root password is e-mailed).
    pub ssh_public_keys: Vec<String>,
    /// Opt-in: allow TCP 22 from this CIDR only. `None`: zero inbound rules.
    pub ssh_source_cidr: Option<String>,
    /// Ownership labels; `ownership.provision_id` is the idempotency key.
    pub ownership: Ownership,
}

impl fmt::Debug for CreateServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateServer")
            .field("name", &self.name)
            .field("region", &self.region)
            .field("size", &self.size)
            .field("image", &self.image)
            .field(
                "user_data",
                &format_args!("<{} bytes>", self.user_data.len()),
            )
            .field("ssh_public_keys", &self.ssh_public_keys.len())
            .field("ssh_source_cidr", &self.ssh_source_cidr)
            .field("ownership", &self.ownership)
            .finish()
    }
}

/// The lifecycle state of a server, mapped from the provider's own state names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Being created or booting.
    Pending,
    Running,
    /// Stopped, errored or being deleted: will not enroll.
    Failed,
}

/// A server as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// Provider server id (opaque string).
    pub id: String,
    pub name: String,
    /// Mapped state.
    pub state: ServerState,
    /// The provider's own state word (`initializing`, `new`, `running`, …).
    pub provider_state: String,
    /// Public IPv4 address, once assigned.
    pub ipv4: Option<String>,
    /// The provision id from its labels / tags, when it carries ours.
    pub provision_id: Option<String>,
}

/// What a credential was proven able to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityReport {
    /// The credential can create resources (not just read).
    pub can_write: bool,
    /// The project / account it belongs to, when the provider says.
    pub account: String,
    /// One line for the operator.
    pub message: String,
    /// Each permission provisioning uses that the probe checked, and whether it is held.
    pub permissions: Vec<PermissionCheck>,
}

/// A server to poll: its provider id and the provision it was created for (some clouds
/// find servers by their provision label rather than by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollTarget {
    pub server_id: String,
    pub provision_id: String,
}

/// One cloud.
#[async_trait]
pub trait CloudProvider: Send + Sync + fmt::Debug {
    /// Which cloud.
    fn id(&self) -> ProviderId;
    /// Regions where servers can be created.
    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError>;
    /// Sizes available in `region`, each with its monthly price where the cloud's catalog
    /// carries one ([`Pricing::Unread`] where the cloud prices them apart).
    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError>;
    /// The prices of `sizes` (as [`Self::list_sizes`] listed them in `region`) where the
    /// cloud publishes them apart, in a price API: each size's price or why it has none,
    /// or why the price API could not be read. `None` where each size carries its own.
    /// Provisioning never waits for it.
    async fn list_prices(&self, _region: &str, _sizes: &[Size]) -> Option<pricing::PriceRead> {
        None
    }
    /// Creates a server, idempotently: a repeated call with the same
    /// `ownership.provision_id` returns the server the first call created.
    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError>;
    /// The server with this id. `ErrorKind::NotFound` when it does not exist.
    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError>;
    /// Deletes what a provision made: the server `server` when one is known, any other
    /// server labelled for `ownership`'s provision, and the resources created only for
    /// it (firewall, SSH keys once unused), found by its labels and names. With `None` (the
    /// create failed or never answered) only the labelled leftovers go. Deleting what
    /// does not exist succeeds; a server labelled for another provision is refused.
    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError>;
    /// How many servers one [`Self::poll_servers`] call reads. 1 for a cloud with no call
    /// that reads several servers at once.
    fn poll_batch(&self) -> usize {
        1
    }
    /// The group a server is polled in: the servers of one `poll_servers` call share it
    /// (the AWS region, the GCP zone). `None`: the server is read alone (`get_server`), as
    /// where `poll_batch` is 1 or the cloud's list cannot be used (DigitalOcean without
    /// the scope to untag).
    fn poll_group(&self, _server_id: &str) -> Option<String> {
        None
    }
    /// Reads `targets` (at most `poll_batch`, all of one `poll_group`) in one API call where
    /// the cloud has one: a list filtered by the control plane's and the provisions' labels,
    /// or by instance ids. DigitalOcean lists a tag the droplets carry while they boot
    /// (every page, then an untag): its answer may hold servers besides the targets. A
    /// target absent from the answer was not found by that call.
    /// The default reads each target with `get_server`.
    async fn poll_servers(
        &self,
        _control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            match self.get_server(&t.server_id).await {
                Ok(info) => out.push(info),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
    /// Servers carrying this control plane's ownership label (orphan detection).
    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError>;
    /// Proves what the credential can do, without creating anything billable.
    async fn probe(&self) -> Result<CapabilityReport, ProviderError>;
}
