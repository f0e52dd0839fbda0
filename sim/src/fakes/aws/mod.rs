//! A fake EC2 + STS + Price List on `127.0.0.1:0`, for tests and demo mode. EC2 and STS
//! speak the Query protocol as the AWS SDKs do: a form-encoded `POST` with `Action` and
//! `Version`, a SigV4 `Authorization` header whose scope names the access key, the region
//! and the service (`ec2`, `sts` or `pricing`; all are served on the same port), and XML
//! answers with the botocore serialization names (`instancesSet`, `imageOwnerId`,
//! `<Errors><Error><Code>`, …). The Price List Query API speaks JSON 1.1 (`pricing.rs`).
//! Inventory is partitioned by the signing region; each region has a default VPC with a
//! default subnet per zone. Instances move `pending → running` (then the boot hook gets the
//! decoded user-data) and `shutting-down → terminated` (then their network interface and
//! volume are released) one `state_step` apart; `RunInstances` honours `ClientToken`; a
//! security group still used by a network interface cannot be deleted
//! (`DependencyViolation`); `DryRun` answers `DryRunOperation`, or `UnauthorizedOperation`
//! for a denied action.
//!
//! Faults are injected per action: `faults().inject(Some("POST"), "/RunInstances", 1, …)`,
//! or per action and subnet: `"/RunInstances/subnet-…"`.
//! `RateLimited` is `RequestLimitExceeded` (503), `Capacity` is
//! `InsufficientInstanceCapacity` (RunInstances only). A zone or subnet can refuse every
//! launch (`refuse_launches`) with `InsufficientInstanceCapacity` or `Unsupported`, as EC2
//! does when a zone lacks capacity for, or does not offer, an instance type; every zone of a
//! region in `full_regions` refuses with `InsufficientInstanceCapacity`.
//!
//! Known differences from AWS: signatures are not verified (only their scope is read);
//! one instance per `RunInstances`; terminated instances stay listed until the fake stops;
//! only `DescribeInstanceTypes` and `DescribeInstanceTypeOfferings` paginate; filters the
//! fake does not implement are refused as invalid.
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

mod api;
mod catalog;
mod demo;
mod ec2;
mod groups;
mod instances;
mod pricing;
mod query;
mod render;
mod state;
mod sts;
mod types;
mod wire;
mod xml;

pub(crate) use demo::start_demo;

pub use catalog::{CANONICAL, NEWEST_NOBLE};
pub use groups::{EC2_TEXT_MAX, EC2_TEXT_PUNCTUATION, ec2_text_ok};
pub use state::LaunchRefusal;

use wire::Shared;

use super::edge::lock;
use super::{BootHook, FaultPlan};

/// The access key the fake accepts by default (the documentation's example shape).
pub const ACCESS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
pub const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
/// The fake account.
pub const ACCOUNT_ID: &str = "123456789012";

/// How the fake behaves.
#[derive(Clone)]
pub struct FakeAwsConfig {
    /// Long-term keys accepted: (access key id, secret access key).
    pub access_keys: Vec<(String, String)>,
    pub account_id: String,
    /// Actions refused with `UnauthorizedOperation` / `AccessDenied` (also for `DryRun`).
    pub denied_actions: Vec<String>,
    /// Called once per instance when it reaches `running`.
    pub boot_hook: Option<BootHook>,
    /// How long `pending` and `shutting-down` last.
    pub state_step: Duration,
    /// When set, every STS session lives this long whatever `DurationSeconds` asked (the
    /// demo's short-lived grants; tests of expiry).
    pub session_lifetime: Option<Duration>,
    /// The most items one page of `DescribeInstanceTypes` / `DescribeInstanceTypeOfferings`
    /// / `GetProducts` holds, whatever `MaxResults` asks (EC2 may answer fewer; small values make clients
    /// follow `NextToken`).
    pub page_limit: usize,
    /// Regions with no capacity left: every zone of them refuses `RunInstances` with
    /// `InsufficientInstanceCapacity`, as EC2 does when no zone of a region can take the
    /// instance type.
    pub full_regions: Vec<String>,
}

impl Default for FakeAwsConfig {
    fn default() -> Self {
        Self {
            access_keys: vec![(ACCESS_KEY_ID.into(), SECRET_ACCESS_KEY.into())],
            account_id: ACCOUNT_ID.into(),
            denied_actions: Vec::new(),
            boot_hook: None,
            state_step: Duration::from_secs(1),
            session_lifetime: None,
            page_limit: 1000,
            full_regions: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FakeAwsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAwsConfig")
            .field("account_id", &self.account_id)
            .field("denied_actions", &self.denied_actions)
            .field("boot_hook", &self.boot_hook.is_some())
            .field("state_step", &self.state_step)
            .field("page_limit", &self.page_limit)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// One request the fake received (parameters as decoded; no header is kept).
#[derive(Debug, Clone)]
pub struct AwsRequest {
    /// `ec2`, `sts` or `pricing` (from the signing scope).
    pub service: String,
    /// The `Action` parameter (the Query protocol), or the operation of `X-Amz-Target`
    /// (the JSON protocol: `GetProducts`).
    pub action: String,
    /// The signing region.
    pub region: String,
    /// The access key that signed it.
    pub access_key_id: String,
    /// Every form parameter.
    pub params: BTreeMap<String, String>,
    /// The JSON body of a JSON-protocol call (`Null` for the Query protocol).
    pub body: serde_json::Value,
    /// The answer's status; `None` when the connection was dropped.
    pub status: Option<u16>,
    /// The error code answered, if any.
    pub error_code: Option<String>,
    /// The XML answered (empty when the connection was dropped).
    pub response: String,
}

/// An instance of the fake account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeInstance {
    /// `i-…`.
    pub id: String,
    pub region: String,
    /// EC2 state name.
    pub state: String,
    pub image_id: String,
    pub instance_type: String,
    pub tags: BTreeMap<String, String>,
    /// Security group ids.
    pub groups: Vec<String>,
    /// Key pair name.
    pub key_name: Option<String>,
    pub subnet_id: String,
    /// The decoded user-data.
    pub user_data: String,
    /// The `ClientToken` it was launched with.
    pub client_token: String,
    /// `MetadataOptions.HttpTokens` (`required`: IMDSv2 only).
    pub http_tokens: String,
    /// Public IPv4.
    pub public_ip: Option<String>,
    /// Its network interface's tags (`None` once released).
    pub eni_tags: Option<BTreeMap<String, String>>,
    /// Its root volume: tags, size in GB and type (`None` once released).
    pub volume: Option<(BTreeMap<String, String>, u32, String)>,
}

/// A security group of the fake account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeGroup {
    /// `sg-…`.
    pub id: String,
    pub region: String,
    pub name: String,
    pub vpc_id: String,
    pub tags: BTreeMap<String, String>,
    /// Ingress rules as `protocol from-to cidr`.
    pub ingress: Vec<String>,
}

/// A key pair of the fake account: (region, name, public key, tags).
pub type FakeKeyPair = (String, String, String, BTreeMap<String, String>);

/// Starts fake EC2 + STS endpoints.
#[derive(Debug)]
pub struct FakeAws;

impl FakeAws {
    /// Binds `127.0.0.1:0` and serves until the handle is dropped.
    pub async fn start(config: FakeAwsConfig) -> std::io::Result<FakeAwsHandle> {
        let shared = Arc::new(Shared {
            account_id: config.account_id,
            access_keys: config.access_keys,
            denied_actions: config.denied_actions,
            boot_hook: config.boot_hook,
            state_step: config.state_step,
            session_lifetime: config.session_lifetime,
            page_limit: config.page_limit,
            faults: FaultPlan::default(),
            inventory: Mutex::new(state::Inventory::with_full_regions(config.full_regions)),
            log: Mutex::default(),
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
        Ok(FakeAwsHandle {
            addr,
            shared,
            server,
        })
    }
}

/// A running fake; dropping it stops the server and its timers.
#[derive(Debug)]
pub struct FakeAwsHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl FakeAwsHandle {
    /// `http://127.0.0.1:<port>`: the endpoint URL of both EC2 and STS.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The faults to inject; paths are `/{Action}`.
    pub fn faults(&self) -> &FaultPlan {
        &self.shared.faults
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<AwsRequest> {
        lock(&self.shared.log).clone()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.shared.log).clear();
    }

    /// Every instance (terminated ones included).
    pub fn instances(&self) -> Vec<FakeInstance> {
        let inv = lock(&self.shared.inventory);
        inv.instances
            .values()
            .map(|i| FakeInstance {
                id: i.id.clone(),
                region: i.region.clone(),
                state: i.state.to_owned(),
                image_id: i.image_id.clone(),
                instance_type: i.instance_type.clone(),
                tags: i.tags.clone(),
                groups: i.groups.clone(),
                key_name: i.key_name.clone(),
                subnet_id: i.subnet_id.clone(),
                user_data: i.user_data.clone(),
                client_token: i.client_token.clone(),
                http_tokens: i.http_tokens.clone(),
                public_ip: i.public_ip.clone(),
                eni_tags: inv.enis.get(&i.eni).map(|e| e.tags.clone()),
                volume: inv
                    .volumes
                    .get(&i.volume)
                    .map(|v| (v.tags.clone(), v.size_gb, v.volume_type.clone())),
            })
            .collect()
    }

    /// Every security group but the VPCs' `default` groups.
    pub fn groups(&self) -> Vec<FakeGroup> {
        lock(&self.shared.inventory)
            .groups
            .values()
            .filter(|g| g.name != "default")
            .map(|g| FakeGroup {
                id: g.id.clone(),
                region: g.region.clone(),
                name: g.name.clone(),
                vpc_id: g.vpc_id.clone(),
                tags: g.tags.clone(),
                ingress: g
                    .ingress
                    .iter()
                    .map(|r| format!("{} {}-{} {}", r.protocol, r.from, r.to, r.cidr))
                    .collect(),
            })
            .collect()
    }

    /// Every key pair.
    pub fn key_pairs(&self) -> Vec<FakeKeyPair> {
        lock(&self.shared.inventory)
            .keys
            .values()
            .map(|k| {
                (
                    k.region.clone(),
                    k.name.clone(),
                    k.public_key.clone(),
                    k.tags.clone(),
                )
            })
            .collect()
    }

    /// How many instances were ever launched with tag `key=value`.
    pub fn launch_count_by_tag(&self, key: &str, value: &str) -> usize {
        lock(&self.shared.inventory)
            .launched_tags
            .iter()
            .filter(|t| t.get(key).is_some_and(|v| v == value))
            .count()
    }

    /// Adds ingress `tcp port-port cidr` to group `id` behind the client's back.
    pub fn add_ingress(&self, id: &str, port: i64, cidr: &str) -> bool {
        let mut inv = lock(&self.shared.inventory);
        let Some(g) = inv.groups.get_mut(id) else {
            return false;
        };
        g.ingress.insert(query::Rule {
            protocol: "tcp".into(),
            from: port,
            to: port,
            cidr: cidr.into(),
        })
    }

    /// Makes `place` (a zone such as `eu-west-1a`, or a subnet id) refuse every launch
    /// with `refusal`; `None` lifts it.
    pub fn refuse_launches(&self, place: &str, refusal: Option<LaunchRefusal>) {
        let mut inv = lock(&self.shared.inventory);
        match refusal {
            Some(r) => inv.refusals.insert(place.to_owned(), r),
            None => inv.refusals.remove(place),
        };
    }

    /// The next `calls` `DescribeInstances` by filter answer as if no instance existed yet,
    /// as EC2 may right after a launch (its reads are eventually consistent).
    pub fn stale_describes(&self, calls: usize) {
        lock(&self.shared.inventory).stale_describes = calls;
    }

    /// The default subnets of `region` as (zone, subnet id), by zone.
    pub fn default_subnets(&self, region: &str) -> Vec<(String, String)> {
        let mut inv = lock(&self.shared.inventory);
        inv.ensure_region(region);
        let mut out: Vec<(String, String)> = inv
            .subnets
            .values()
            .filter(|s| s.region == region && s.default_for_az)
            .map(|s| (s.zone.clone(), s.id.clone()))
            .collect();
        out.sort();
        out
    }

    /// Creates a non-default VPC with one subnet in `region`: (vpc id, subnet id).
    pub fn add_subnet(&self, region: &str) -> (String, String) {
        lock(&self.shared.inventory).add_custom_subnet(region)
    }

    /// Stops serving and cancels the timers.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for FakeAwsHandle {
    fn drop(&mut self) {
        self.server.abort();
        for t in lock(&self.shared.tasks).drain(..) {
            t.abort();
        }
    }
}
