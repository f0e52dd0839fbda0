//! The Hetzner Cloud API v1 JSON shapes this client reads and writes (a subset of
//! `hcloud-openapi.json`). Answers are read leniently: only the fields used are declared.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `meta.pagination` of a list answer.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Meta {
    #[serde(default)]
    pub(super) pagination: Option<Pagination>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Pagination {
    #[serde(default)]
    pub(super) next_page: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Location {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct ServerType {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) cores: u32,
    /// GB.
    #[serde(default)]
    pub(super) memory: f64,
    /// GB.
    #[serde(default)]
    pub(super) disk: f64,
    /// Older flag, still sent.
    #[serde(default)]
    pub(super) deprecated: Option<bool>,
    /// Set (non-null) when the type is deprecated everywhere.
    #[serde(default)]
    pub(super) deprecation: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) prices: Vec<Price>,
    /// `x86` or `arm`.
    #[serde(default)]
    pub(super) architecture: String,
    #[serde(default)]
    pub(super) locations: Vec<ServerTypeLocation>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Price {
    pub(super) location: String,
    pub(super) price_monthly: Amount,
}

#[derive(Debug, Deserialize)]
pub(super) struct Amount {
    /// VAT included, decimal string (`"4.5101000000"`).
    pub(super) gross: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct ServerTypeLocation {
    pub(super) name: String,
    /// Set when the type is deprecated in this location.
    #[serde(default)]
    pub(super) deprecation: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Server {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) status: String,
    #[serde(default)]
    pub(super) labels: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) public_net: Option<PublicNet>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct PublicNet {
    #[serde(default)]
    pub(super) ipv4: Option<Ipv4>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Ipv4 {
    #[serde(default)]
    pub(super) ip: String,
}

/// `{"server": …}` of GET /servers/{id} and POST /servers. The `root_password` of the
/// create answer is not declared: it is `null` when SSH keys are given, and never read.
#[derive(Debug, Deserialize)]
pub(super) struct ServerEnvelope {
    pub(super) server: Server,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct SshKey {
    pub(super) id: u64,
    pub(super) name: String,
    #[serde(default)]
    pub(super) labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct SshKeyEnvelope {
    pub(super) ssh_key: SshKey,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Firewall {
    pub(super) id: u64,
}

#[derive(Debug, Deserialize)]
pub(super) struct FirewallEnvelope {
    pub(super) firewall: Firewall,
}

/// POST /servers.
#[derive(Debug, Serialize)]
pub(super) struct CreateServerRequest<'a> {
    pub(super) name: &'a str,
    pub(super) server_type: &'a str,
    pub(super) location: &'a str,
    pub(super) image: &'a str,
    pub(super) user_data: &'a str,
    pub(super) labels: &'a BTreeMap<String, String>,
    /// Key names (the API takes ids or names; the description types the items as strings).
    pub(super) ssh_keys: Vec<String>,
    pub(super) firewalls: Vec<FirewallRef>,
    pub(super) start_after_create: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct FirewallRef {
    pub(super) firewall: u64,
}

/// POST /ssh_keys.
#[derive(Debug, Serialize)]
pub(super) struct CreateSshKeyRequest<'a> {
    pub(super) name: &'a str,
    pub(super) public_key: &'a str,
    pub(super) labels: &'a BTreeMap<String, String>,
}

/// POST /firewalls.
#[derive(Debug, Serialize)]
pub(super) struct CreateFirewallRequest<'a> {
    pub(super) name: &'a str,
    pub(super) labels: &'a BTreeMap<String, String>,
    pub(super) rules: Vec<Rule>,
}

#[derive(Debug, Serialize)]
pub(super) struct Rule {
    pub(super) direction: &'static str,
    pub(super) protocol: &'static str,
    pub(super) port: String,
    pub(super) source_ips: Vec<String>,
    pub(super) description: &'static str,
}
