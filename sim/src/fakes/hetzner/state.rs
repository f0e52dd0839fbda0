//! The fake Hetzner project's inventory (servers, firewalls, SSH keys) and how each is
//! rendered in the API's JSON.
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::catalog::{self, Location, ServerType};

#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) location: &'static Location,
    pub(crate) server_type: &'static ServerType,
    pub(crate) image: String,
    pub(crate) user_data: String,
    pub(crate) ssh_keys: Vec<String>,
    pub(crate) firewalls: Vec<u64>,
    pub(crate) created: String,
    pub(crate) booted: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Firewall {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) rules: Vec<Value>,
    pub(crate) applied_to: BTreeSet<u64>,
    pub(crate) created: String,
}

#[derive(Debug, Clone)]
pub(crate) struct SshKey {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) public_key: String,
    pub(crate) fingerprint: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) created: String,
}

/// Everything in the fake project.
#[derive(Debug, Default)]
pub(crate) struct Inventory {
    next_id: u64,
    pub(crate) servers: BTreeMap<u64, Server>,
    pub(crate) firewalls: BTreeMap<u64, Firewall>,
    pub(crate) ssh_keys: BTreeMap<u64, SshKey>,
    /// The labels of every server ever created (deleted ones included).
    pub(crate) created_labels: Vec<BTreeMap<String, String>>,
}

impl Inventory {
    /// A fresh id (servers, firewalls, keys and actions share one sequence).
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Removes a server and detaches it from its firewalls.
    pub(crate) fn remove_server(&mut self, id: u64) -> Option<Server> {
        let s = self.servers.remove(&id)?;
        for f in self.firewalls.values_mut() {
            f.applied_to.remove(&id);
        }
        Some(s)
    }
}

/// Now, RFC 3339.
pub(crate) fn now_rfc3339() -> String {
    OffsetDateTime::from(SystemTime::now())
        .replace_nanosecond(0)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// The public IPv4 of server `id` (198.18.0.0/15, the benchmarking range).
pub(crate) fn ipv4_of(id: u64) -> String {
    format!(
        "198.{}.{}.{}",
        18 + (id >> 16) % 2,
        (id >> 8) & 0xff,
        id & 0xff
    )
}

/// `action` as the API renders it.
pub(crate) fn action_json(id: u64, command: &str, resource: (u64, &str), finished: bool) -> Value {
    json!({
        "id": id, "command": command, "status": if finished { "success" } else { "running" },
        "progress": if finished { 100 } else { 0 }, "started": now_rfc3339(),
        "finished": if finished { Value::String(now_rfc3339()) } else { Value::Null },
        "resources": [{ "id": resource.0, "type": resource.1 }], "error": null,
    })
}

/// `server` as the API renders it.
pub(crate) fn server_json(s: &Server) -> Value {
    let firewalls: Vec<Value> = s
        .firewalls
        .iter()
        .map(|f| json!({ "id": f, "status": "applied" }))
        .collect();
    json!({
        "id": s.id, "name": s.name, "status": s.status, "created": s.created, "labels": s.labels,
        "public_net": {
            "ipv4": { "id": s.id + 1_000_000, "ip": ipv4_of(s.id), "blocked": false, "dns_ptr": format!("static.{}.clients.your-server.de", ipv4_of(s.id)) },
            "ipv6": { "id": s.id + 2_000_000, "ip": format!("2001:db8:{:x}::/64", s.id), "blocked": false, "dns_ptr": [] },
            "floating_ips": [], "firewalls": firewalls,
        },
        "private_net": [],
        "server_type": catalog::server_type_json(s.server_type),
        "datacenter": catalog::datacenter_json(s.location),
        "location": catalog::location_json(s.location),
        "image": catalog::image_json(&s.image, s.server_type.architecture),
        "iso": null, "rescue_enabled": false, "locked": false, "backup_window": null,
        "outgoing_traffic": 0, "ingoing_traffic": 0, "included_traffic": 21_990_232_555_520u64,
        "protection": { "delete": false, "rebuild": false },
        "load_balancers": [], "volumes": [], "primary_disk_size": s.server_type.disk_gb, "placement_group": null,
    })
}

/// `firewall` as the API renders it.
pub(crate) fn firewall_json(f: &Firewall) -> Value {
    let applied: Vec<Value> = f
        .applied_to
        .iter()
        .map(|id| json!({ "type": "server", "server": { "id": id } }))
        .collect();
    json!({ "id": f.id, "name": f.name, "labels": f.labels, "created": f.created, "rules": f.rules, "applied_to": applied })
}

/// `ssh_key` as the API renders it.
pub(crate) fn ssh_key_json(k: &SshKey) -> Value {
    json!({ "id": k.id, "name": k.name, "fingerprint": k.fingerprint, "public_key": k.public_key, "labels": k.labels, "created": k.created })
}
