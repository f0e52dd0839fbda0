//! A fake Hetzner Cloud API v1 on `127.0.0.1:0`, for tests and demo mode: the real paths
//! and JSON of `hcloud-openapi.json` (locations, server types with per-location prices,
//! servers, SSH keys, firewalls, label selectors, paging, the error envelope), bearer auth,
//! unique names, servers moving `initializing → starting → running` over time with a boot
//! hook receiving the user-data, the project's rate limit (3,600/h unless configured) with
//! `RateLimit-*` headers, and every `Fault` of the `FaultPlan`.
//!
//! ```ignore
//! let fake = FakeHetzner::start(FakeHetznerConfig::default()).await?;
//! let provider = HetznerProvider::new(&fake.base_url(), token, limiter, policy)?;
//! fake.faults().inject(Some("POST"), "/servers", 1, Fault::ProcessThenDrop);
//! ```
//!
//! Faults: `Delay` answers late but the call is processed even when the client gave up;
//! `ProcessThenDrop` processes, then aborts the connection; `Capacity` (412
//! `resource_unavailable`) applies to POST calls only and is ignored on others. A location
//! named in `full_regions` refuses every server create with the same answer.
//!
//! Known differences from the real API: a firewall `apply_to` may only name servers; actions are not served (`/actions`); `Retry-After` is
//! sent only by the `RateLimited` fault (the real API sends `RateLimit-Reset` only).
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;

mod api;
mod bucket;
mod catalog;
mod demo;
mod labels;
mod resources;
mod routes;
mod servers;
mod state;
mod wire;

pub(crate) use demo::start_demo;

use bucket::Bucket;
use wire::Shared;

use super::edge::lock;
use super::{BootHook, FaultPlan};

/// How the fake behaves.
#[derive(Clone)]
pub struct FakeHetznerConfig {
    /// The only bearer token accepted.
    pub token: String,
    /// The token may only send GET requests (others get 401 `token_readonly`).
    pub read_only: bool,
    /// Called once per server when it reaches `running`.
    pub boot_hook: Option<BootHook>,
    /// How long `initializing`, `starting` and `deleting` each last.
    pub state_step: Duration,
    /// The project's limit in requests per hour (3,600 unless Hetzner changed it), refilled
    /// evenly as Hetzner does (one per second at 3,600); `None`: no limit.
    pub rate_limit: Option<u32>,
    /// The largest `per_page` honoured (Hetzner: 50); lower it to test paging.
    pub max_per_page: u64,
    /// Locations with no capacity left: a server create there answers 412
    /// `resource_unavailable`, as Hetzner does when a location cannot place a server.
    pub full_regions: Vec<String>,
}

impl Default for FakeHetznerConfig {
    /// Token `fake-hetzner-token`, 1 s per state, Hetzner's 3,600/h refilling 1/s, 50 per page.
    fn default() -> Self {
        Self {
            token: "fake-hetzner-token".into(),
            read_only: false,
            boot_hook: None,
            state_step: Duration::from_secs(1),
            rate_limit: Some(3600),
            max_per_page: 50,
            full_regions: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FakeHetznerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHetznerConfig")
            .field("read_only", &self.read_only)
            .field("boot_hook", &self.boot_hook.is_some())
            .field("state_step", &self.state_step)
            .field("rate_limit", &self.rate_limit)
            .field("max_per_page", &self.max_per_page)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// One request the fake received, for contract tests.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// When it arrived (`tokio::time`, so paused test clocks apply).
    pub at: tokio::time::Instant,
    /// `GET`, `POST`, …
    pub method: String,
    /// Path relative to `/v1`, with the query string as sent (`/servers?label_selector=…`).
    pub path: String,
    /// The JSON body (`Null` when none; a JSON string holding the text when not JSON).
    pub body: Value,
    /// The answer's status; `None` when the connection was dropped instead.
    pub status: Option<u16>,
    /// The answer's JSON body (`Null` when none).
    pub response: Value,
}

/// A server in the fake project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeServer {
    pub id: u64,
    pub name: String,
    /// Hetzner status word.
    pub status: String,
    pub labels: BTreeMap<String, String>,
    /// Location name.
    pub location: String,
    /// Server type name.
    pub server_type: String,
    /// Image name.
    pub image: String,
    /// The user-data it was created with.
    pub user_data: String,
    /// Names of the SSH keys injected at creation.
    pub ssh_keys: Vec<String>,
    /// Ids of the firewalls applied.
    pub firewalls: Vec<u64>,
    /// Public IPv4.
    pub ipv4: String,
}

/// A firewall in the fake project.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeFirewall {
    pub id: u64,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Rules as the API renders them.
    pub rules: Vec<Value>,
    /// Ids of the servers it is applied to.
    pub applied_to: Vec<u64>,
}

/// An SSH key in the fake project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSshKey {
    pub id: u64,
    pub name: String,
    /// OpenSSH public key.
    pub public_key: String,
    pub fingerprint: String,
    pub labels: BTreeMap<String, String>,
}

/// Starts fake Hetzner APIs.
#[derive(Debug)]
pub struct FakeHetzner;

impl FakeHetzner {
    /// Binds `127.0.0.1:0` and serves on a tokio task until the handle is shut down or dropped.
    pub async fn start(config: FakeHetznerConfig) -> std::io::Result<FakeHetznerHandle> {
        let shared = Arc::new(Shared {
            token: config.token,
            read_only: config.read_only,
            boot_hook: config.boot_hook,
            state_step: config.state_step,
            max_per_page: config.max_per_page.max(1),
            full_regions: config.full_regions,
            faults: FaultPlan::default(),
            inventory: Mutex::default(),
            log: Mutex::default(),
            bucket: Mutex::new(config.rate_limit.map(Bucket::per_hour)),
            tasks: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new()
            .fallback(api::entry)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeHetznerHandle {
            addr,
            shared,
            server,
        })
    }
}

/// A running fake; dropping it stops the server and its timers.
#[derive(Debug)]
pub struct FakeHetznerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl FakeHetznerHandle {
    /// `http://127.0.0.1:<port>/v1`, to give the client as its base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The faults to inject; paths are relative to `/v1` (`/servers`).
    pub fn faults(&self) -> &FaultPlan {
        &self.shared.faults
    }

    /// Every server, by id.
    pub fn servers(&self) -> Vec<FakeServer> {
        lock(&self.shared.inventory)
            .servers
            .values()
            .map(|s| FakeServer {
                id: s.id,
                name: s.name.clone(),
                status: s.status.clone(),
                labels: s.labels.clone(),
                location: s.location.name.to_owned(),
                server_type: s.server_type.name.to_owned(),
                image: s.image.clone(),
                user_data: s.user_data.clone(),
                ssh_keys: s.ssh_keys.clone(),
                firewalls: s.firewalls.clone(),
                ipv4: state::ipv4_of(s.id),
            })
            .collect()
    }

    /// Every firewall, by id.
    pub fn firewalls(&self) -> Vec<FakeFirewall> {
        lock(&self.shared.inventory)
            .firewalls
            .values()
            .map(|f| FakeFirewall {
                id: f.id,
                name: f.name.clone(),
                labels: f.labels.clone(),
                rules: f.rules.clone(),
                applied_to: f.applied_to.iter().copied().collect(),
            })
            .collect()
    }

    /// Every SSH key, by id.
    pub fn ssh_keys(&self) -> Vec<FakeSshKey> {
        lock(&self.shared.inventory)
            .ssh_keys
            .values()
            .map(|k| FakeSshKey {
                id: k.id,
                name: k.name.clone(),
                public_key: k.public_key.clone(),
                fingerprint: k.fingerprint.clone(),
                labels: k.labels.clone(),
            })
            .collect()
    }

    /// Every request received so far, in arrival order.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        lock(&self.shared.log).clone()
    }

    /// The requests received so far, forgotten in the same step: none can arrive between
    /// reading the log and clearing it.
    pub fn take_request_log(&self) -> Vec<LoggedRequest> {
        std::mem::take(&mut *lock(&self.shared.log))
    }

    /// Forgets the requests received so far.
    pub fn clear_request_log(&self) {
        lock(&self.shared.log).clear();
    }

    /// How many servers were ever created with label `key=value` (deleted ones included).
    pub fn create_count_by_label(&self, key: &str, value: &str) -> usize {
        lock(&self.shared.inventory)
            .created_labels
            .iter()
            .filter(|l| l.get(key).is_some_and(|v| v == value))
            .count()
    }

    /// Sets a server's status word (`off`, `running`, …), as if changed outside the API.
    /// Returns false when there is no such server.
    pub fn set_server_status(&self, id: u64, status: &str) -> bool {
        match lock(&self.shared.inventory).servers.get_mut(&id) {
            Some(s) => {
                s.status = status.to_owned();
                true
            }
            None => false,
        }
    }

    /// Stops serving and cancels the state timers.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for FakeHetznerHandle {
    fn drop(&mut self) {
        self.server.abort();
        for t in lock(&self.shared.tasks).drain(..) {
            t.abort();
        }
    }
}
