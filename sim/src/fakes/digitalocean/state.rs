//! The fake DigitalOcean's inventory (droplets, firewalls, SSH keys, tags), the snapshots
//! tests read, the request log, and the small helpers every handler shares (DigitalOcean
//! error bodies, query parsing, timestamps, ids).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::limits::Limits;
use super::scopes::Access;
use crate::fakes::{BootHook, FaultPlan};

/// Everything the server shares between requests.
pub(super) struct Shared {
    /// Every token accepted, with what it may do.
    pub(super) tokens: BTreeMap<String, Access>,
    pub(super) boot_hook: Option<BootHook>,
    pub(super) state_step: Duration,
    pub(super) page_size_cap: usize,
    pub(super) droplet_limit: usize,
    /// Regions refusing every droplet create for lack of capacity.
    pub(super) full_regions: Vec<String>,
    /// `http://127.0.0.1:<port>`: the origin of paging and action links.
    pub(super) origin: String,
    pub(super) faults: FaultPlan,
    pub(super) limits: Mutex<Limits>,
    pub(super) inventory: Mutex<Inventory>,
    pub(super) log: Mutex<Vec<LoggedRequest>>,
}

impl Shared {
    pub(super) fn inventory(&self) -> MutexGuard<'_, Inventory> {
        self.inventory.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A droplet as the fake stores it.
#[derive(Debug, Clone)]
pub(super) struct DropletRecord {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) region: String,
    pub(super) size: String,
    pub(super) image: String,
    pub(super) tags: Vec<String>,
    pub(super) ssh_keys: Vec<u64>,
    pub(super) user_data: String,
    pub(super) status: String,
    pub(super) created: Instant,
    pub(super) created_at: String,
    pub(super) public_ipv4: String,
    pub(super) private_ipv4: String,
    pub(super) booted: bool,
}

/// A firewall as the fake stores it (rules kept as sent).
#[derive(Debug, Clone)]
pub(super) struct FirewallRecord {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) inbound_rules: Vec<Value>,
    pub(super) outbound_rules: Vec<Value>,
    pub(super) droplet_ids: Vec<u64>,
    pub(super) tags: Vec<String>,
    pub(super) created_at: String,
}

/// An account SSH key.
#[derive(Debug, Clone)]
pub(super) struct KeyRecord {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) public_key: String,
    pub(super) fingerprint: String,
}

/// The account's resources.
#[derive(Debug, Default)]
pub(super) struct Inventory {
    pub(super) droplets: BTreeMap<u64, DropletRecord>,
    pub(super) firewalls: Vec<FirewallRecord>,
    pub(super) keys: Vec<KeyRecord>,
    pub(super) tags: BTreeSet<String>,
    counter: u64,
}

impl Inventory {
    /// A fresh number (droplet, key and action ids, addresses, uuids).
    pub(super) fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }
}

/// A droplet as a test sees it.
#[derive(Clone, PartialEq, Eq)]
pub struct FakeDroplet {
    /// Droplet id.
    pub id: u64,
    pub name: String,
    /// `new`, `active`, `off` or `archive`.
    pub status: String,
    /// Region slug.
    pub region: String,
    /// Size slug.
    pub size: String,
    /// Image slug.
    pub image: String,
    pub tags: Vec<String>,
    /// Ids of the account keys embedded at creation.
    pub ssh_key_ids: Vec<u64>,
    /// The user-data it was created with.
    pub user_data: String,
    /// Its public IPv4 address (shown by the API once active).
    pub ipv4: String,
}

impl std::fmt::Debug for FakeDroplet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDroplet")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("status", &self.status)
            .field("tags", &self.tags)
            .field(
                "user_data",
                &format_args!("<{} bytes>", self.user_data.len()),
            )
            .finish_non_exhaustive()
    }
}

impl From<&DropletRecord> for FakeDroplet {
    fn from(d: &DropletRecord) -> Self {
        Self {
            id: d.id,
            name: d.name.clone(),
            status: d.status.clone(),
            region: d.region.clone(),
            size: d.size.clone(),
            image: d.image.clone(),
            tags: d.tags.clone(),
            ssh_key_ids: d.ssh_keys.clone(),
            user_data: d.user_data.clone(),
            ipv4: d.public_ipv4.clone(),
        }
    }
}

/// A firewall as a test sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeFirewall {
    /// Firewall id (a UUID).
    pub id: String,
    pub name: String,
    /// Inbound rules as sent.
    pub inbound_rules: Vec<Value>,
    /// Outbound rules as sent.
    pub outbound_rules: Vec<Value>,
    /// Droplets it applies to by id.
    pub droplet_ids: Vec<u64>,
    /// Tags it applies to.
    pub tags: Vec<String>,
}

impl From<&FirewallRecord> for FakeFirewall {
    fn from(f: &FirewallRecord) -> Self {
        Self {
            id: f.id.clone(),
            name: f.name.clone(),
            inbound_rules: f.inbound_rules.clone(),
            outbound_rules: f.outbound_rules.clone(),
            droplet_ids: f.droplet_ids.clone(),
            tags: f.tags.clone(),
        }
    }
}

/// An account SSH key as a test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSshKey {
    /// Key id.
    pub id: u64,
    pub name: String,
    /// The public key line as uploaded.
    pub public_key: String,
    /// MD5 fingerprint, colon-separated (as DigitalOcean shows it).
    pub fingerprint: String,
}

impl From<&KeyRecord> for FakeSshKey {
    fn from(k: &KeyRecord) -> Self {
        Self {
            id: k.id,
            name: k.name.clone(),
            public_key: k.public_key.clone(),
            fingerprint: k.fingerprint.clone(),
        }
    }
}

/// One request the fake received and what it answered.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// When it arrived (on the tokio clock, so paused-clock tests can measure spacing).
    pub at: Instant,
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, `/v2/…`, without the query.
    pub path: String,
    /// The query string (empty when none).
    pub query: String,
    /// The JSON request body (`Null` when none; a string when it was not JSON).
    pub body: Value,
    /// The answer's status; `None` when no answer reached the client (the fake dropped the
    /// connection, or the client gave up first).
    pub status: Option<u16>,
    /// The JSON answer body (`Null` when none).
    pub response: Value,
}

impl LoggedRequest {
    /// `path?query` (just the path when there is no query).
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }
}

/// A JSON answer.
pub(super) fn json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// DigitalOcean's error body: `{"id", "message", "request_id"}`.
pub(super) fn error(status: StatusCode, id: &str, message: &str) -> Response {
    json(
        status,
        json!({ "id": id, "message": message, "request_id": request_id() }),
    )
}

/// 404 `not_found` with DigitalOcean's text.
pub(super) fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "The resource you were accessing could not be found.",
    )
}

/// 204 with no body.
pub(super) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// 422 `unprocessable_entity`.
/// DigitalOcean's 422 message when a region cannot take new droplets.
pub(super) const REGION_UNAVAILABLE: &str = "The region you selected is currently unavailable for new Droplets. Please select a different region.";

pub(super) fn unprocessable(message: &str) -> Response {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "unprocessable_entity",
        message,
    )
}

/// The JSON object a request carries, if it is one.
pub(super) fn parse_body(body: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
}

/// DigitalOcean's 400 for a body it cannot parse.
pub(super) fn bad_body() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "bad_request",
        "error parsing request body",
    )
}

/// A UUID-shaped identifier made from `n` (stable, unique per fake).
pub(super) fn uuid(n: u64) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        0xd0u64 << 24 | (n >> 32),
        n >> 16 & 0xffff,
        n >> 4 & 0xfff,
        n & 0xfff,
        n
    )
}

fn request_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    uuid(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) | 1 << 40)
}

/// Query parameters, percent-decoded, in order.
pub(super) fn query_pairs(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Now as RFC 3339 UTC (`2026-08-01T12:00:00Z`).
pub(super) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Whether `name` is a valid DigitalOcean tag name (`[A-Za-z0-9_:-]`, at most 255).
pub(super) fn valid_tag(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))
}
