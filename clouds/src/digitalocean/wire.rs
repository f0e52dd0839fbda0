//! DigitalOcean API v2 wire types: the fields Levelrail reads from answers and the bodies it
//! sends, per `specs/digitalocean-public.v2.bundled.json`. Unknown fields are ignored so
//! additions on DigitalOcean's side never break parsing.
use serde::{Deserialize, Serialize};

/// `region` (GET /v2/regions).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Region {
    pub(super) slug: String,
    pub(super) name: String,
    pub(super) available: bool,
}

/// `size` (GET /v2/sizes). `memory` is MiB, `disk` GB, `price_monthly` USD.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Size {
    pub(super) slug: String,
    pub(super) memory: u64,
    pub(super) vcpus: u32,
    pub(super) disk: u32,
    pub(super) price_monthly: f64,
    pub(super) regions: Vec<String>,
    pub(super) available: bool,
    #[serde(default)]
    pub(super) description: String,
}

/// `droplet`, reduced to what a `ServerInfo` needs.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Droplet {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) status: String,
    /// When it was created (RFC 3339); empty when absent.
    #[serde(default)]
    pub(super) created_at: String,
    #[serde(default)]
    pub(super) networks: Networks,
    #[serde(default)]
    pub(super) tags: Vec<String>,
}

/// `droplet.networks`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Networks {
    #[serde(default)]
    pub(super) v4: Vec<NetworkV4>,
}

/// `network_v4`: `type` is `public` or `private`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct NetworkV4 {
    pub(super) ip_address: String,
    #[serde(rename = "type")]
    pub(super) kind: String,
}

/// `{"droplet": …}` (GET /v2/droplets/{id}, 202 of POST /v2/droplets).
#[derive(Debug, Deserialize)]
pub(super) struct DropletEnvelope {
    pub(super) droplet: Droplet,
}

/// `firewall`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Firewall {
    pub(super) id: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) tags: Option<Vec<String>>,
}

/// `{"firewall": …}` (202 of POST /v2/firewalls).
#[derive(Debug, Deserialize)]
pub(super) struct FirewallEnvelope {
    pub(super) firewall: Firewall,
}

/// `sshKeys`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct SshKey {
    pub(super) id: u64,
    pub(super) name: String,
}

/// `{"ssh_key": …}` (201 of POST /v2/account/keys).
#[derive(Debug, Deserialize)]
pub(super) struct SshKeyEnvelope {
    pub(super) ssh_key: SshKey,
}

/// `account`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Account {
    pub(super) email: String,
    pub(super) uuid: String,
    pub(super) status: String,
    #[serde(default)]
    pub(super) team: Option<Team>,
}

/// `account.team`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Team {
    #[serde(default)]
    pub(super) uuid: String,
    #[serde(default)]
    pub(super) name: String,
}

/// `{"account": …}` (GET /v2/account).
#[derive(Debug, Deserialize)]
pub(super) struct AccountEnvelope {
    pub(super) account: Account,
}

/// The two error shapes: `error` (`id`, `message`, `request_id`) on most endpoints and
/// `error_with_root_causes` (`error`, `messages`, `root_causes`) on a few (POST /v2/tags).
#[derive(Debug, Default, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) messages: Option<Vec<String>>,
}

/// `droplet_single_create`.
#[derive(Debug, Serialize)]
pub(super) struct CreateDroplet<'a> {
    pub(super) name: &'a str,
    pub(super) region: &'a str,
    pub(super) size: &'a str,
    pub(super) image: &'a str,
    pub(super) ssh_keys: Vec<u64>,
    pub(super) backups: bool,
    pub(super) ipv6: bool,
    pub(super) monitoring: bool,
    pub(super) tags: Vec<String>,
    pub(super) user_data: &'a str,
}

/// POST /v2/firewalls body (`firewall` with `name` and rules). No inbound rule at all is
/// sent as no `inbound_rules` key.
#[derive(Debug, Serialize)]
pub(super) struct CreateFirewall {
    pub(super) name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) inbound_rules: Vec<InboundRule>,
    pub(super) outbound_rules: Vec<OutboundRule>,
    pub(super) tags: Vec<String>,
}

/// `firewall_rule_target`, addresses only.
#[derive(Debug, Serialize)]
pub(super) struct Addresses {
    pub(super) addresses: Vec<String>,
}

/// An inbound rule: `protocol`, `ports`, `sources`.
#[derive(Debug, Serialize)]
pub(super) struct InboundRule {
    pub(super) protocol: &'static str,
    pub(super) ports: String,
    pub(super) sources: Addresses,
}

/// An outbound rule: `protocol`, `ports`, `destinations`.
#[derive(Debug, Serialize)]
pub(super) struct OutboundRule {
    pub(super) protocol: &'static str,
    pub(super) ports: String,
    pub(super) destinations: Addresses,
}

/// POST /v2/account/keys body.
#[derive(Debug, Serialize)]
pub(super) struct CreateSshKey<'a> {
    pub(super) name: &'a str,
    pub(super) public_key: &'a str,
}

/// POST /v2/tags body.
#[derive(Debug, Serialize)]
pub(super) struct CreateTag<'a> {
    pub(super) name: &'a str,
}

/// DELETE /v2/tags/{tag}/resources body: the resources the tag comes off.
#[derive(Debug, Serialize)]
pub(super) struct TagResources {
    pub(super) resources: Vec<TaggedResource>,
}

/// One resource of `TagResources`.
#[derive(Debug, Serialize)]
pub(super) struct TaggedResource {
    pub(super) resource_id: String,
    pub(super) resource_type: &'static str,
}

/// POST /v2/firewalls/{id}/tags body.
#[derive(Debug, Serialize)]
pub(super) struct FirewallTags {
    pub(super) tags: Vec<String>,
}
