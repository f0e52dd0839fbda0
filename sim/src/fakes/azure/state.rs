//! The fake Azure subscription's inventory: resource groups, resources (VMs, disks, VNets,
//! subnets, NSGs, public IPs, NICs) as ARM renders them, long-running operations, and the
//! access tokens Azure AD issued.
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use serde_json::{Value, json};

/// A resource as stored: ARM's envelope plus the fake's own bookkeeping.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    /// The id with the casing it was created with.
    pub(crate) id: String,
    /// `Microsoft.Network/networkInterfaces`, …
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) location: String,
    pub(crate) tags: BTreeMap<String, String>,
    pub(crate) sku: Value,
    /// `properties`, `provisioningState` included.
    pub(crate) properties: Value,
}

impl Resource {
    /// As ARM renders it.
    pub(crate) fn render(&self) -> Value {
        let mut v = json!({ "id": self.id, "name": self.name, "type": self.kind, "properties": self.properties });
        if !self.location.is_empty() {
            v["location"] = json!(self.location);
        }
        if !self.tags.is_empty() || !self.kind.ends_with("/subnets") {
            v["tags"] = json!(self.tags);
        }
        if !self.sku.is_null() {
            v["sku"] = self.sku.clone();
        }
        v
    }

    /// `properties.provisioningState`.
    pub(crate) fn state(&self) -> &str {
        self.properties
            .get("provisioningState")
            .and_then(Value::as_str)
            .unwrap_or("Succeeded")
    }

    pub(crate) fn set_state(&mut self, state: &str) {
        self.properties["provisioningState"] = json!(state);
    }
}

/// What only VMs have.
#[derive(Debug, Clone)]
pub(crate) struct VmExtra {
    /// `running`, `starting`, `stopped`, `deallocated`, … (empty before provisioning ends).
    pub(crate) power: String,
    /// The decoded `customData`.
    pub(crate) user_data: String,
    /// The admin password, when one was set (changing it is refused, as by ARM).
    pub(crate) password: Option<String>,
    pub(crate) booted: bool,
}

/// A long-running operation.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    /// `InProgress`, `Succeeded`, `Failed`.
    pub(crate) status: String,
    /// (code, message) when failed.
    pub(crate) error: Option<(String, String)>,
}

/// Everything in the fake subscription.
#[derive(Debug, Default)]
pub(crate) struct Inventory {
    next: u64,
    /// Resource groups: lowercase name → name.
    pub(crate) groups: BTreeMap<String, String>,
    /// Resources by lowercase id.
    pub(crate) resources: BTreeMap<String, Resource>,
    /// VM extras by lowercase id.
    pub(crate) vms: BTreeMap<String, VmExtra>,
    pub(crate) operations: HashMap<String, Operation>,
    /// Access tokens and their expiry.
    pub(crate) tokens: HashMap<String, SystemTime>,
    /// The tags of every VM ever created (deleted ones included).
    pub(crate) created_vm_tags: Vec<BTreeMap<String, String>>,
    /// Retail Prices requests that came with an `Authorization` header.
    pub(crate) price_calls_with_credentials: usize,
}

impl Inventory {
    /// A fresh number (ids, addresses, operations).
    pub(crate) fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Resource> {
        self.resources.get(&id.to_ascii_lowercase())
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Resource> {
        self.resources.get_mut(&id.to_ascii_lowercase())
    }

    pub(crate) fn insert(&mut self, r: Resource) {
        self.resources.insert(r.id.to_ascii_lowercase(), r);
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<Resource> {
        self.vms.remove(&id.to_ascii_lowercase());
        self.resources.remove(&id.to_ascii_lowercase())
    }

    /// Ids of resources whose properties reference `id` (NICs of a subnet, VMs of a NIC, …).
    pub(crate) fn referrers(&self, id: &str) -> Vec<String> {
        let needle = id.to_ascii_lowercase();
        self.resources
            .values()
            .filter(|r| r.id.to_ascii_lowercase() != needle && references(&r.properties, &needle))
            .map(|r| r.id.clone())
            .collect()
    }

    /// A new operation, returning its id.
    pub(crate) fn start_operation(&mut self, done: bool) -> String {
        let id = format!("{:08x}-0000-4000-8000-{:012x}", self.next(), self.next());
        let status = if done { "Succeeded" } else { "InProgress" };
        self.operations.insert(
            id.clone(),
            Operation {
                status: status.into(),
                error: None,
            },
        );
        id
    }

    pub(crate) fn finish_operation(&mut self, id: &str, error: Option<(&str, &str)>) {
        if let Some(op) = self.operations.get_mut(id) {
            op.status = if error.is_some() {
                "Failed"
            } else {
                "Succeeded"
            }
            .into();
            op.error = error.map(|(c, m)| (c.to_owned(), m.to_owned()));
        }
    }
}

/// Whether any `"id"` inside `v` equals `needle` (lowercase).
fn references(v: &Value, needle: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            (k == "id" && x.as_str().is_some_and(|s| s.to_ascii_lowercase() == needle))
                || references(x, needle)
        }),
        Value::Array(a) => a.iter().any(|x| references(x, needle)),
        _ => false,
    }
}

/// ARM's error envelope.
pub(crate) fn error(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
}

/// The public address of the `n`-th public IP (20.50.0.0/16, documentation-style).
pub(crate) fn address(n: u64) -> String {
    format!("20.50.{}.{}", (n >> 8) & 0xff, n & 0xff)
}
