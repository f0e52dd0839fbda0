//! A fake DigitalOcean API v2 on 127.0.0.1: the real paths and JSON shapes
//! (`specs/digitalocean-public.v2.bundled.json`), bearer authentication with full-access,
//! read-only and custom-scoped tokens (the scope checked before the body), an inventory of
//! droplets, firewalls, SSH keys and tags, droplets moving `new → active` over time with a
//! boot hook, per-token rate limits with DigitalOcean's headers, and fault injection at any
//! call. Used by the provider tests and by demo mode.
//!
//! Fault rules match the method and the full request path (`/v2/droplets`, …). `Capacity`
//! applies to droplet creates only, as does a region of `full_regions` (every create there
//! is refused with the same 422 after validation, leaving nothing behind); `Delay` stalls before the handler runs (a client that
//! gives up first leaves nothing behind); `ProcessThenDrop` runs the handler and then cuts the
//! connection, as when an answer is lost on its way back.
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{delete, get, post};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::fakes::{BootHook, FaultPlan};

mod account;
mod catalog;
mod demo;
mod droplets;
mod firewalls;
mod gate;
mod limits;
mod scopes;
mod state;

pub(crate) use demo::start_demo;

pub use limits::RateLimits;
pub use scopes::{DESCRIBED_SCOPES, ROUTE_SCOPES};
pub use state::{FakeDroplet, FakeFirewall, FakeSshKey, LoggedRequest};

use scopes::Access;
use state::{Inventory, Shared};

/// How the fake behaves.
#[derive(Clone)]
pub struct FakeDigitalOceanConfig {
    /// The API token it accepts (full access).
    pub token: String,
    /// Called once per droplet when it becomes `active`, with its user-data.
    pub boot_hook: Option<BootHook>,
    /// How long a droplet stays `new`.
    pub state_step: Duration,
    /// Requests allowed per token (default 250/min and 5,000/h).
    pub rate_limits: RateLimits,
    /// A second token that may read but gets 403 `forbidden` on every write.
    pub read_only_token: Option<String>,
    /// Custom-scoped tokens: each may call only the operations whose scopes
    /// (`droplet:create`, `tag:delete`, …) it holds, and gets 403 `forbidden` otherwise.
    pub scoped_tokens: Vec<(String, Vec<String>)>,
    /// Largest `per_page` honoured (DigitalOcean: 200); lower it to test paging.
    pub page_size_cap: usize,
    /// Droplets the account may have at once.
    pub droplet_limit: usize,
    /// Regions with no capacity left: a droplet create there answers 422
    /// `unprocessable_entity` saying the region is unavailable for new droplets.
    pub full_regions: Vec<String>,
}

impl Default for FakeDigitalOceanConfig {
    fn default() -> Self {
        Self {
            token: "dop_v1_fake".into(),
            boot_hook: None,
            state_step: Duration::from_secs(2),
            rate_limits: RateLimits::default(),
            read_only_token: None,
            scoped_tokens: Vec::new(),
            page_size_cap: 200,
            droplet_limit: 50,
            full_regions: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FakeDigitalOceanConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDigitalOceanConfig")
            .field("boot_hook", &self.boot_hook.is_some())
            .field("state_step", &self.state_step)
            .field("rate_limits", &self.rate_limits)
            .field("page_size_cap", &self.page_size_cap)
            .field("droplet_limit", &self.droplet_limit)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// A running fake. Dropping it stops the server.
pub struct FakeDigitalOcean {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FakeDigitalOcean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDigitalOcean")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeDigitalOcean {
    /// Starts on 127.0.0.1 with a free port.
    pub async fn start(config: FakeDigitalOceanConfig) -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), config).await
    }

    /// Starts on `addr` (demo mode may pick the port).
    pub async fn start_on(
        addr: SocketAddr,
        config: FakeDigitalOceanConfig,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let mut tokens = BTreeMap::from([(config.token, Access::Full)]);
        tokens.extend(config.read_only_token.map(|t| (t, Access::ReadOnly)));
        for (token, held) in config.scoped_tokens {
            tokens.insert(token, Access::Scoped(held.into_iter().collect()));
        }
        let shared = Arc::new(Shared {
            tokens,
            boot_hook: config.boot_hook,
            state_step: config.state_step,
            page_size_cap: config.page_size_cap,
            droplet_limit: config.droplet_limit,
            full_regions: config.full_regions,
            origin: format!("http://{addr}"),
            faults: FaultPlan::default(),
            limits: Mutex::new(limits::Limits::new(config.rate_limits)),
            inventory: Mutex::new(Inventory::default()),
            log: Mutex::new(Vec::new()),
        });
        let app = router(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            server: Some(server),
        })
    }

    /// The API base URL to give a client: `http://127.0.0.1:<port>/v2`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v2", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The faults to inject (rules match `/v2/…` paths).
    pub fn faults(&self) -> &FaultPlan {
        &self.shared.faults
    }

    /// Every droplet, by id.
    pub fn droplets(&self) -> Vec<FakeDroplet> {
        droplets::advance(&self.shared);
        self.shared
            .inventory()
            .droplets
            .values()
            .map(FakeDroplet::from)
            .collect()
    }

    /// Every firewall, in creation order.
    pub fn firewalls(&self) -> Vec<FakeFirewall> {
        self.shared
            .inventory()
            .firewalls
            .iter()
            .map(FakeFirewall::from)
            .collect()
    }

    /// Every account SSH key, in upload order.
    pub fn keys(&self) -> Vec<FakeSshKey> {
        self.shared
            .inventory()
            .keys
            .iter()
            .map(FakeSshKey::from)
            .collect()
    }

    /// Every tag name.
    pub fn tags(&self) -> Vec<String> {
        self.shared.inventory().tags.iter().cloned().collect()
    }

    /// Every request received so far, with the answer sent.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forces a droplet's status (`off`, `archive`, …), as an operator action or a failure
    /// on DigitalOcean's side would. False when there is no such droplet.
    pub fn set_droplet_status(&self, id: u64, status: &str) -> bool {
        let mut inv = self.shared.inventory();
        match inv.droplets.get_mut(&id) {
            Some(d) => {
                d.status = status.to_owned();
                true
            }
            None => false,
        }
    }

    /// Stops the server, letting in-flight requests finish (at most one second).
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut server) = self.server.take()
            && tokio::time::timeout(Duration::from_secs(1), &mut server)
                .await
                .is_err()
        {
            server.abort();
        }
    }
}

impl Drop for FakeDigitalOcean {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v2/account", get(account::get_account))
        .route(
            "/v2/account/keys",
            get(account::list_keys).post(account::create_key),
        )
        .route(
            "/v2/account/keys/{key}",
            get(account::get_key).delete(account::delete_key),
        )
        .route("/v2/regions", get(catalog::list_regions))
        .route("/v2/sizes", get(catalog::list_sizes))
        .route("/v2/droplets", get(droplets::list).post(droplets::create))
        .route(
            "/v2/droplets/{id}",
            get(droplets::get).delete(droplets::delete),
        )
        .route(
            "/v2/firewalls",
            get(firewalls::list).post(firewalls::create),
        )
        .route(
            "/v2/firewalls/{id}",
            get(firewalls::get).delete(firewalls::delete),
        )
        .route("/v2/firewalls/{id}/droplets", post(firewalls::add_droplets))
        .route("/v2/firewalls/{id}/tags", post(firewalls::add_tags))
        .route("/v2/tags", post(account::create_tag))
        .route(
            "/v2/tags/{tag}",
            get(account::get_tag).delete(account::delete_tag),
        )
        .route("/v2/tags/{tag}/resources", delete(account::untag_resources))
        .fallback(|| async { state::not_found() })
        .layer(from_fn_with_state(Arc::clone(&shared), gate::gate))
        .layer(from_fn_with_state(Arc::clone(&shared), gate::record))
        .with_state(shared)
}
