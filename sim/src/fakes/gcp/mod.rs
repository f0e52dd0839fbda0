//! A fake Google Cloud on `127.0.0.1:0`: the OAuth 2.0 token endpoint (service-account JWT
//! assertions, RS256-verified), STS and IAM Credentials (workload identity federation with
//! optional impersonation), and Compute Engine v1 (project, zones, machine types, the
//! default network, firewalls, instances with their life cycle and boot hook, zonal and
//! global operations with `wait`, `requestId` deduplication, label filters, paging), the
//! Cloud Billing catalog of Compute Engine SKU prices, with every `Fault` of the
//! `FaultPlan`.
//!
//! Known differences from Google: one origin serves every API; access tokens are opaque;
//! firewall operations finish at once; no subnetworks, disks or images resources.
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ring::signature::RsaKeyPair;
use serde_json::Value;
use tokio::task::{AbortHandle, JoinHandle};

mod auth;
mod billing;
mod catalog;
mod compute;
mod demo;
mod firewalls;
mod iam;
mod instances;
mod listing;
mod state;
mod wire;

pub(crate) use demo::start_demo;

use super::edge::{self, Call, Cloud, LoggedRequest, Reply, lock};
use super::{BootHook, Fault, FaultPlan};
use state::{Inventory, TokenKind, error};

/// The test service account's PKCS#8 private key (a throw-away key made for these fakes).
pub const TEST_SERVICE_ACCOUNT_KEY_PEM: &str = include_str!("test-sa-key.pem");

/// How the fake behaves.
#[derive(Clone)]
pub struct FakeGcpConfig {
    pub project_id: String,
    /// The service account (JWT `iss`, impersonation target).
    pub client_email: String,
    /// The key's id (JWT `kid`).
    pub private_key_id: String,
    /// The key's PKCS#8 PEM (the fake checks signatures with its public half).
    pub private_key_pem: String,
    /// The workload identity pool provider (STS `audience`).
    pub audience: String,
    /// The subject token type STS accepts.
    pub subject_token_type: String,
    /// Lifetime of issued tokens.
    pub token_lifetime: Duration,
    /// How long each instance state lasts.
    pub state_step: Duration,
    /// The largest page (`maxResults` is capped to it).
    pub max_results: usize,
    /// The largest page of the billing catalog's SKUs (Google's is 5000).
    pub sku_page_size: usize,
    /// Called once per instance when it reaches `RUNNING`.
    pub boot_hook: Option<BootHook>,
    /// Zones (or regions: every zone of them) with no capacity left: an instance insert
    /// there is accepted, then its operation ends with `ZONE_RESOURCE_POOL_EXHAUSTED` and
    /// no instance, as Compute Engine does when a zone's resource pool is exhausted.
    pub full_regions: Vec<String>,
}

impl Default for FakeGcpConfig {
    fn default() -> Self {
        Self {
            project_id: "levelrail-fake-1".into(),
            client_email: "levelrail@levelrail-fake-1.iam.gserviceaccount.com".into(),
            private_key_id: "0123456789abcdef0123456789abcdef01234567".into(),
            private_key_pem: TEST_SERVICE_ACCOUNT_KEY_PEM.into(),
            audience: "//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/levelrail/providers/ci".into(),
            subject_token_type: "urn:ietf:params:oauth:token-type:jwt".into(),
            token_lifetime: auth::DEFAULT_LIFETIME,
            state_step: Duration::from_secs(1),
            max_results: 500,
            sku_page_size: 5000,
            boot_hook: None,
            full_regions: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FakeGcpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeGcpConfig")
            .field("project_id", &self.project_id)
            .field("state_step", &self.state_step)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// Switches a test may flip while the fake runs.
#[derive(Debug)]
pub(crate) struct Settings {
    /// Compute accepts federated (STS) tokens directly, without impersonation.
    pub(crate) federated_direct_access: bool,
    /// Only these subject tokens are trusted by STS (`None`: any).
    pub(crate) trusted_subjects: Option<Vec<String>>,
    /// IAM permissions the service account lacks in the project: `testIamPermissions`
    /// leaves them out, and the calls that need them are refused with 403.
    pub(crate) denied_permissions: BTreeSet<String>,
}

/// State shared by the handlers, the timers and the handle.
pub(crate) struct Shared {
    pub(crate) cfg: FakeGcpConfig,
    pub(crate) key: RsaKeyPair,
    addr: SocketAddr,
    faults: FaultPlan,
    log: Mutex<Vec<LoggedRequest>>,
    pub(crate) inventory: Mutex<Inventory>,
    pub(crate) settings: Mutex<Settings>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// `http://127.0.0.1:<port>`.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/compute/v1`.
    pub(crate) fn compute_base(&self) -> String {
        format!("{}/compute/v1", self.origin())
    }

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
            Fault::RateLimited { retry_after_secs } => {
                Reply::json(429, error(429, "rateLimitExceeded", "Rate Limit Exceeded"))
                    .header("retry-after", retry_after_secs.to_string())
            }
            Fault::InternalError => Reply::json(
                500,
                error(500, "backendError", "Internal error. Please try again."),
            ),
            Fault::Unavailable => Reply::json(
                503,
                error(503, "backendError", "The service is currently unavailable."),
            ),
            // Instance inserts fail asynchronously (the operation reports the stockout).
            Fault::Capacity if call.method == "POST" && call.path.ends_with("/instances") => {
                return None;
            }
            Fault::Capacity if call.method == "POST" => {
                Reply::json(403, error(403, "quotaExceeded", "Quota exceeded."))
            }
            _ => return None,
        })
    }

    fn handle(self: &Arc<Self>, call: &Call, capacity: bool) -> Reply {
        let segs = call.segments();
        match segs.as_slice() {
            ["token"] => auth::oauth_token(self, call),
            ["v1", "token"] => auth::sts_token(self, call),
            ["v1", "projects", "-", "serviceAccounts", target] if call.method == "POST" => {
                match target.strip_suffix(":generateAccessToken") {
                    Some(email) => auth::generate_access_token(self, call, email),
                    None => Reply::json(404, error(404, "notFound", "Not Found")),
                }
            }
            ["compute", "v1", ..] => compute::handle(self, call, capacity),
            ["v1", "services", service, "skus"] => billing::list_skus(self, call, service),
            ["v3", "projects", target] if call.method == "POST" => {
                iam::test_iam_permissions(self, call, target)
            }
            _ => Reply::json(404, error(404, "notFound", "Not Found")),
        }
    }
}

/// An instance of the fake, as a test sees it.
#[derive(Debug, Clone)]
pub struct FakeInstance {
    /// `<zone>/<name>`.
    pub id: String,
    pub name: String,
    /// `PROVISIONING`, `STAGING`, `RUNNING`, `STOPPING`.
    pub status: String,
    pub labels: BTreeMap<String, String>,
    /// The insert body as sent.
    pub body: Value,
}

/// Starts fake Google clouds.
#[derive(Debug)]
pub struct FakeGcp;

impl FakeGcp {
    /// Binds `127.0.0.1:0` and serves on a tokio task until the handle is dropped.
    pub async fn start(config: FakeGcpConfig) -> std::io::Result<FakeGcpHandle> {
        let der = pem_body(&config.private_key_pem).ok_or_else(|| {
            std::io::Error::other("the service-account key is not a PEM PKCS#8 key")
        })?;
        let key = RsaKeyPair::from_pkcs8(&der).map_err(|e| std::io::Error::other(e.to_string()))?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut inventory = Inventory::default();
        inventory.default_network = true;
        let shared = Arc::new(Shared {
            cfg: config,
            key,
            addr,
            faults: FaultPlan::default(),
            log: Mutex::default(),
            inventory: Mutex::new(inventory),
            settings: Mutex::new(Settings {
                federated_direct_access: false,
                trusted_subjects: None,
                denied_permissions: BTreeSet::new(),
            }),
            tasks: Mutex::default(),
        });
        let app = axum::Router::new()
            .fallback(edge::entry::<Shared>)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeGcpHandle { shared, server })
    }
}

/// A running fake; dropping it stops the server and its timers.
#[derive(Debug)]
pub struct FakeGcpHandle {
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl FakeGcpHandle {
    /// The Compute base URL (`…/compute/v1`).
    pub fn compute_url(&self) -> String {
        self.shared.compute_base()
    }

    /// The Cloud Billing v1 base (`…`, the catalog at `v1/services/{service}/skus`).
    pub fn billing_url(&self) -> String {
        self.shared.origin()
    }

    /// The OAuth token endpoint (`…/token`).
    pub fn token_url(&self) -> String {
        format!("{}/token", self.shared.origin())
    }

    /// The Cloud Resource Manager v3 base (`…/v3`).
    pub fn resource_manager_url(&self) -> String {
        format!("{}/v3", self.shared.origin())
    }

    /// Takes `permissions` from the service account (`testIamPermissions` stops listing
    /// them; the calls needing them get 403).
    pub fn deny_permissions(&self, permissions: &[&str]) {
        lock(&self.shared.settings)
            .denied_permissions
            .extend(permissions.iter().map(|p| (*p).to_owned()));
    }

    /// The STS token endpoint (`…/v1/token`).
    pub fn sts_url(&self) -> String {
        format!("{}/v1/token", self.shared.origin())
    }

    /// The IAM Credentials base (`generateAccessToken` is under `/v1/projects/-/serviceAccounts/`).
    pub fn iam_credentials_url(&self) -> String {
        self.shared.origin()
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &FakeGcpConfig {
        &self.shared.cfg
    }

    /// The service-account key JSON a customer would download for the fake's account.
    pub fn service_account_key_json(&self) -> String {
        let c = &self.shared.cfg;
        serde_json::json!({
            "type": "service_account", "project_id": c.project_id, "private_key_id": c.private_key_id,
            "private_key": c.private_key_pem, "client_email": c.client_email, "client_id": "109876543210987654321",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs", "universe_domain": "googleapis.com",
        })
        .to_string()
    }

    /// The faults to inject (paths as sent: `/compute/v1/projects/…`, `/token`, `/v1/token`).
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

    /// A service-account access token Compute accepts (as if the OAuth endpoint issued it).
    pub fn mint_token(&self) -> String {
        auth::issue(&self.shared, TokenKind::ServiceAccount, "minted", true)
    }

    /// A token Compute accepts whose scopes do not reach the billing catalog (`compute`
    /// alone).
    pub fn mint_token_without_billing_scope(&self) -> String {
        auth::issue(
            &self.shared,
            TokenKind::ServiceAccount,
            "compute-only",
            false,
        )
    }

    /// Every instance.
    pub fn instances(&self) -> Vec<FakeInstance> {
        lock(&self.shared.inventory)
            .instances
            .iter()
            .map(|(k, i)| FakeInstance {
                id: k.clone(),
                name: i.name.clone(),
                status: i.status.clone(),
                labels: i.labels.clone(),
                body: i.body.clone(),
            })
            .collect()
    }

    /// Every firewall, as the API renders it.
    pub fn firewalls(&self) -> Vec<Value> {
        lock(&self.shared.inventory)
            .firewalls
            .values()
            .cloned()
            .collect()
    }

    /// Replaces a firewall's fields, as if edited in the console. False when absent.
    pub fn edit_firewall(&self, name: &str, edit: impl FnOnce(&mut Value)) -> bool {
        lock(&self.shared.inventory)
            .firewalls
            .get_mut(name)
            .map(edit)
            .is_some()
    }

    /// How many instances were ever created with label `key=value` (deleted ones included).
    pub fn create_count_by_label(&self, key: &str, value: &str) -> usize {
        lock(&self.shared.inventory)
            .created_labels
            .iter()
            .filter(|l| l.get(key).is_some_and(|v| v == value))
            .count()
    }

    /// Whether the project has its `default` network.
    pub fn set_default_network(&self, present: bool) {
        lock(&self.shared.inventory).default_network = present;
    }

    /// Whether Compute accepts federated tokens without impersonation.
    pub fn set_federated_direct_access(&self, on: bool) {
        lock(&self.shared.settings).federated_direct_access = on;
    }

    /// Only these STS subject tokens are trusted (`None`: any).
    pub fn trust_subjects(&self, subjects: Option<Vec<String>>) {
        lock(&self.shared.settings).trusted_subjects = subjects;
    }

    /// Sets an instance's status (`TERMINATED`, …), as if changed in the console.
    pub fn set_status(&self, id: &str, status: &str) -> bool {
        lock(&self.shared.inventory)
            .instances
            .get_mut(id)
            .map(|i| i.status = status.to_owned())
            .is_some()
    }
}

impl Drop for FakeGcpHandle {
    fn drop(&mut self) {
        self.server.abort();
        for t in lock(&self.shared.tasks).drain(..) {
            t.abort();
        }
    }
}

/// The DER inside a PEM block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}
