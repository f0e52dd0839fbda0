//! A fake Azure (Azure AD v2.0 token endpoint + Resource Manager) on `127.0.0.1:0` over
//! HTTPS with a throw-away test CA, as the official SDKs require: client-secret and
//! federated (JWT client assertion) token grants, access tokens with an expiry, the
//! subscription catalog (locations, VM sizes, Resource SKUs with restrictions), the public
//! Retail Prices API (`/api/retail/prices`, OData filters, pages), resource
//! groups, VNets / subnets / NSGs / public IPs / NICs / VMs / disks with ARM's JSON, api-version checks, long-running operations
//! (`Azure-AsyncOperation` for PUT, `Location` for DELETE), VM state transitions with a
//! boot hook receiving the decoded `customData`, the `deleteOption` cascade (switchable, to
//! test a cascade that leaves the NIC and public IP behind), effective permissions, and
//! every `Fault` of the `FaultPlan`.
//!
//! Known differences from Azure: AAD and ARM share one origin; tokens are opaque, not
//! JWTs; operations of network resources finish at once; no zones, availability sets,
//! extensions or boot diagnostics.
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::task::{AbortHandle, JoinHandle};

mod aad;
mod arm;
mod catalog;
mod compute;
mod deletes;
mod demo;
mod network;
mod prices;
mod roles;
mod skus;
mod state;
mod wire;

pub(crate) use demo::start_demo;

use super::edge::{self, Call, Cloud, LoggedRequest, Reply, lock};
use super::tls::TestCa;
use super::{BootHook, Fault, FaultPlan};
use state::{Inventory, error};

/// How the fake behaves.
#[derive(Clone)]
pub struct FakeAzureConfig {
    /// The directory (tenant) id.
    pub tenant_id: String,
    /// The application (client) id.
    pub client_id: String,
    /// The client secret accepted.
    pub client_secret: String,
    pub subscription_id: String,
    /// Resource groups that exist from the start.
    pub resource_groups: Vec<String>,
    /// Lifetime of issued access tokens (`expires_in`).
    pub token_lifetime: Duration,
    /// How long each VM state lasts.
    pub state_step: Duration,
    /// Items per page of the resource list (`nextLink` beyond).
    pub page_size: usize,
    /// Rows per page of the Retail Prices API (`NextPageLink` beyond; Azure's is 1,000).
    pub price_page_size: usize,
    /// Called once per VM when it reaches `PowerState/running`.
    pub boot_hook: Option<BootHook>,
    /// Locations with no capacity left: a VM create there is accepted, then its operation
    /// fails with `AllocationFailed` and the VM stays in `Failed`, as ARM does when no
    /// cluster of the region can allocate the size.
    pub full_regions: Vec<String>,
}

impl Default for FakeAzureConfig {
    fn default() -> Self {
        Self {
            tenant_id: "72f988bf-86f1-41af-91ab-2d7cd011db47".into(),
            client_id: "04b07795-8ddb-461a-bbee-02f9e1bf7b46".into(),
            client_secret: "fake-azure-client-secret".into(),
            subscription_id: "00000000-0000-4000-8000-00000000a2e0".into(),
            resource_groups: vec!["levelrail-nodes".into()],
            token_lifetime: Duration::from_secs(3599),
            state_step: Duration::from_secs(1),
            page_size: 100,
            price_page_size: 1000,
            boot_hook: None,
            full_regions: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FakeAzureConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAzureConfig")
            .field("subscription_id", &self.subscription_id)
            .field("state_step", &self.state_step)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// Switches a test may flip while the fake runs.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) subscription_reader: bool,
    /// A custom role at subscription scope instead (its `actions`).
    pub(crate) subscription_actions: Option<Vec<String>>,
    pub(crate) contributor: bool,
    /// A custom role on the resource groups instead (`actions`, `notActions`).
    pub(crate) custom_role: Option<(Vec<String>, Vec<String>)>,
    pub(crate) cascade_network: bool,
    pub(crate) accepted_assertions: Option<Vec<String>>,
}

/// State shared by the handlers, the timers and the handle.
pub(crate) struct Shared {
    pub(crate) cfg: FakeAzureConfig,
    pub(crate) base: OnceLock<String>,
    faults: FaultPlan,
    log: Mutex<Vec<LoggedRequest>>,
    pub(crate) inventory: Mutex<Inventory>,
    pub(crate) settings: Mutex<Settings>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl Shared {
    pub(crate) fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.abort_handle());
    }
}

impl Cloud for Shared {
    fn faults(&self) -> &FaultPlan {
        &self.faults
    }

    fn log(&self) -> &Mutex<Vec<LoggedRequest>> {
        &self.log
    }

    fn fault_reply(&self, fault: &Fault, call: &Call) -> Option<Reply> {
        Some(match fault {
            Fault::RateLimited { retry_after_secs } => Reply::json(
                429,
                error("TooManyRequests", "The request is being throttled."),
            )
            .header("retry-after", retry_after_secs.to_string()),
            Fault::InternalError => Reply::json(
                500,
                error("InternalServerError", "An internal server error occurred."),
            ),
            Fault::Unavailable => Reply::json(
                503,
                error("ServiceUnavailable", "The service is unavailable."),
            ),
            // VM creates fail asynchronously (the operation reports AllocationFailed).
            Fault::Capacity
                if call.method == "PUT"
                    && call.path.to_ascii_lowercase().contains("/virtualmachines/") =>
            {
                return None;
            }
            Fault::Capacity if call.method == "PUT" => Reply::json(
                409,
                error(
                    "SkuNotAvailable",
                    "The requested size is currently not available.",
                ),
            ),
            _ => return None,
        })
    }

    fn handle(self: &Arc<Self>, call: &Call, capacity: bool) -> Reply {
        let segs = call.segments();
        match segs.as_slice() {
            [tenant, "oauth2", "v2.0", "token"] => aad::token(self, call, tenant),
            ["api", "retail", "prices"] => prices::retail_prices(self, call),
            _ => arm::handle(self, call, capacity),
        }
    }
}

/// A VM of the fake, as a test sees it.
#[derive(Debug, Clone)]
pub struct FakeVm {
    pub name: String,
    pub tags: BTreeMap<String, String>,
    /// `Creating`, `Succeeded`, `Failed`, `Deleting`.
    pub provisioning_state: String,
    /// `starting`, `running`, … (empty before provisioning ends).
    pub power: String,
    /// The decoded `customData`.
    pub user_data: String,
    /// The stored resource as ARM renders it (no password, no `customData`).
    pub resource: Value,
}

/// Starts fake Azure clouds.
#[derive(Debug)]
pub struct FakeAzure;

impl FakeAzure {
    /// Binds `127.0.0.1:0` and serves HTTPS on a tokio task until the handle is dropped.
    pub async fn start(config: FakeAzureConfig) -> std::io::Result<FakeAzureHandle> {
        let ca = TestCa::generate()?;
        let mut inventory = Inventory::default();
        for g in &config.resource_groups {
            inventory.groups.insert(g.to_ascii_lowercase(), g.clone());
        }
        let shared = Arc::new(Shared {
            cfg: config,
            base: OnceLock::new(),
            faults: FaultPlan::default(),
            log: Mutex::default(),
            inventory: Mutex::new(inventory),
            settings: Mutex::new(Settings {
                subscription_reader: true,
                subscription_actions: None,
                contributor: true,
                custom_role: None,
                cascade_network: true,
                accepted_assertions: None,
            }),
            tasks: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let _ = shared.base.set(format!("https://{addr}"));
        let app = axum::Router::new()
            .fallback(edge::entry::<Shared>)
            .with_state(shared.clone());
        let server = ca.serve(listener, app);
        Ok(FakeAzureHandle {
            addr,
            ca,
            shared,
            server,
        })
    }
}

/// A running fake; dropping it stops the server and its timers.
#[derive(Debug)]
pub struct FakeAzureHandle {
    addr: SocketAddr,
    ca: TestCa,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl FakeAzureHandle {
    /// `https://127.0.0.1:<port>`: the ARM base URL.
    pub fn base_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The Retail Prices API (same origin): `<base>/api/retail/prices`.
    pub fn prices_url(&self) -> String {
        self.base_url()
    }

    /// How many Retail Prices requests came with an `Authorization` header (the API is
    /// public: a client sending its ARM token there leaks it).
    pub fn price_calls_with_credentials(&self) -> usize {
        lock(&self.shared.inventory).price_calls_with_credentials
    }

    /// The Azure AD authority (same origin): token endpoint `<authority>/<tenant>/oauth2/v2.0/token`.
    pub fn authority_url(&self) -> String {
        self.base_url()
    }

    /// The test CA's certificate, PEM, for the client's roots.
    pub fn ca_pem(&self) -> &str {
        self.ca.ca_pem()
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &FakeAzureConfig {
        &self.shared.cfg
    }

    /// The faults to inject (paths as sent: `/subscriptions/…`, `/<tenant>/oauth2/…`).
    pub fn faults(&self) -> &FaultPlan {
        &self.shared.faults
    }

    /// Every request received so far, in arrival order.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Forgets the requests received so far.
    pub fn clear_request_log(&self) {
        lock(&self.shared.log).clear();
    }

    /// An access token ARM accepts (as if Azure AD had issued it), valid for the configured lifetime.
    pub fn mint_token(&self) -> String {
        let mut inv = lock(&self.shared.inventory);
        let token = format!("fake-aad-minted-{}", uuid::Uuid::new_v4().simple());
        inv.tokens.insert(
            token.clone(),
            SystemTime::now() + self.shared.cfg.token_lifetime,
        );
        token
    }

    /// Every VM.
    pub fn vms(&self) -> Vec<FakeVm> {
        let inv = lock(&self.shared.inventory);
        inv.resources
            .values()
            .filter(|r| r.kind == "Microsoft.Compute/virtualMachines")
            .map(|r| {
                let x = inv.vms.get(&r.id.to_ascii_lowercase());
                FakeVm {
                    name: r.name.clone(),
                    tags: r.tags.clone(),
                    provisioning_state: r.state().to_owned(),
                    power: x.map(|x| x.power.clone()).unwrap_or_default(),
                    user_data: x.map(|x| x.user_data.clone()).unwrap_or_default(),
                    resource: r.render(),
                }
            })
            .collect()
    }

    /// (type, name, tags) of every resource (subnets included).
    pub fn resources(&self) -> Vec<(String, String, BTreeMap<String, String>)> {
        lock(&self.shared.inventory)
            .resources
            .values()
            .map(|r| (r.kind.clone(), r.name.clone(), r.tags.clone()))
            .collect()
    }

    /// How many VMs were ever created with tag `key=value` (deleted ones included).
    pub fn create_count_by_tag(&self, key: &str, value: &str) -> usize {
        lock(&self.shared.inventory)
            .created_vm_tags
            .iter()
            .filter(|t| t.get(key).is_some_and(|v| v == value))
            .count()
    }

    /// Whether deleting a VM also deletes its NIC and public IP (`deleteOption: Delete`).
    pub fn set_network_cascade(&self, on: bool) {
        lock(&self.shared.settings).cascade_network = on;
    }

    /// Whether the principal has Reader at subscription scope (locations, VM sizes).
    pub fn set_subscription_reader(&self, on: bool) {
        lock(&self.shared.settings).subscription_reader = on;
    }

    /// Gives the principal a custom role at subscription scope (its `actions` patterns), or
    /// back to Reader / none as `set_subscription_reader` says with `None`.
    pub fn set_subscription_actions(&self, actions: Option<&[&str]>) {
        lock(&self.shared.settings).subscription_actions =
            actions.map(|a| a.iter().map(|s| (*s).to_owned()).collect());
    }

    /// Gives the principal a custom role on the resource groups: its `actions` and
    /// `notActions` patterns, as `Microsoft.Authorization/permissions` reports them.
    pub fn set_custom_role(&self, actions: &[&str], not_actions: &[&str]) {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        lock(&self.shared.settings).custom_role = Some((own(actions), own(not_actions)));
    }

    /// Whether the principal is Contributor on the resource groups (else Reader).
    pub fn set_contributor(&self, on: bool) {
        lock(&self.shared.settings).contributor = on;
    }

    /// Only these client assertions are trusted (`None`: any JWT-shaped assertion).
    pub fn trust_assertions(&self, assertions: Option<Vec<String>>) {
        lock(&self.shared.settings).accepted_assertions = assertions;
    }

    /// Adds a subnet to a VNet, as an operator would in the portal. False without the VNet.
    pub fn add_subnet(&self, group: &str, vnet: &str, subnet: &str, prefix: &str) -> bool {
        let vnet_id = format!(
            "/subscriptions/{}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworks/{vnet}",
            self.shared.cfg.subscription_id
        );
        let mut inv = lock(&self.shared.inventory);
        if inv.get(&vnet_id).is_none() {
            return false;
        }
        inv.insert(state::Resource {
            id: format!("{vnet_id}/subnets/{subnet}"),
            kind: "Microsoft.Network/virtualNetworks/subnets".into(),
            name: subnet.to_owned(),
            location: String::new(),
            tags: BTreeMap::new(),
            sku: Value::Null,
            properties: serde_json::json!({ "addressPrefix": prefix, "provisioningState": "Succeeded" }),
        });
        true
    }

    /// Sets a VM's power state (`stopped`, `deallocated`, …), as if changed in the portal.
    pub fn set_power(&self, vm: &str, power: &str) -> bool {
        let mut inv = lock(&self.shared.inventory);
        let Some(id) = inv
            .resources
            .values()
            .find(|r| r.kind == "Microsoft.Compute/virtualMachines" && r.name == vm)
            .map(|r| r.id.to_ascii_lowercase())
        else {
            return false;
        };
        inv.vms
            .get_mut(&id)
            .map(|x| x.power = power.to_owned())
            .is_some()
    }
}

impl Drop for FakeAzureHandle {
    fn drop(&mut self) {
        self.server.abort();
        for t in lock(&self.shared.tasks).drain(..) {
            t.abort();
        }
    }
}
