//! `/ssh_keys` and `/firewalls` of the fake. Keys are parsed like OpenSSH public keys
//! (`invalid_input` otherwise) and unique by name and by fingerprint; firewalls are unique by
//! name, their rules are checked, and deleting one still applied to a server answers 422
//! `resource_in_use`.
use std::sync::Arc;

use serde_json::{Value, json};

use super::labels;
use super::state::{Firewall, SshKey, firewall_json, now_rfc3339, ssh_key_json};
use super::wire::{
    Call, Reply, Shared, id_of, invalid, name_filter, not_found, not_unique, page, selected,
    selector,
};
use crate::fakes::edge::lock;
use crate::fakes::fingerprint::md5_fingerprint;

const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

pub(crate) fn list_keys(shared: &Shared, call: &Call) -> Reply {
    let sel = match selector(call) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let fingerprint = call.param("fingerprint");
    let items = lock(&shared.inventory)
        .ssh_keys
        .values()
        .filter(|k| name_filter(call, &k.name) && selected(&sel, &k.labels))
        .filter(|k| fingerprint.is_none_or(|f| f == k.fingerprint))
        .map(ssh_key_json)
        .collect();
    page(shared, call, "ssh_keys", items)
}

pub(crate) fn get_key(shared: &Shared, id: &str) -> Reply {
    let inv = lock(&shared.inventory);
    match id_of(id).and_then(|id| inv.ssh_keys.get(&id)) {
        Some(k) => Reply::json(200, json!({ "ssh_key": ssh_key_json(k) })),
        None => not_found("SSH key"),
    }
}

pub(crate) fn create_key(shared: &Arc<Shared>, call: &Call) -> Reply {
    let b = &call.body;
    let Some(name) = b
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
    else {
        return invalid("name", "is required");
    };
    let Some(public_key) = b.get("public_key").and_then(Value::as_str) else {
        return invalid("public_key", "is required");
    };
    let Some(fingerprint) = fingerprint(public_key) else {
        return invalid("public_key", "invalid public key");
    };
    let labels = match labels::validate(b.get("labels").unwrap_or(&Value::Null)) {
        Ok(l) => l,
        Err(e) => return invalid("labels", &e),
    };
    let mut inv = lock(&shared.inventory);
    if inv.ssh_keys.values().any(|k| k.name == name) {
        return not_unique("name", "SSH key with the same name already exists");
    }
    if inv.ssh_keys.values().any(|k| k.fingerprint == fingerprint) {
        return not_unique(
            "public_key",
            "SSH key with the same fingerprint already exists",
        );
    }
    let id = inv.next_id();
    let key = SshKey {
        id,
        name: name.to_owned(),
        public_key: public_key.trim().to_owned(),
        fingerprint,
        labels,
        created: now_rfc3339(),
    };
    let rendered = ssh_key_json(&key);
    inv.ssh_keys.insert(id, key);
    Reply::json(201, json!({ "ssh_key": rendered }))
}

pub(crate) fn delete_key(shared: &Shared, id: &str) -> Reply {
    let mut inv = lock(&shared.inventory);
    match id_of(id).and_then(|id| inv.ssh_keys.remove(&id)) {
        Some(_) => Reply::no_content(),
        None => not_found("SSH key"),
    }
}

/// The key's fingerprint as Hetzner shows it (MD5, colon-separated), or `None` when the
/// text is not an OpenSSH public key of a type Hetzner accepts.
fn fingerprint(public_key: &str) -> Option<String> {
    let kind = public_key.split_whitespace().next()?;
    if !KEY_TYPES.contains(&kind) {
        return None;
    }
    md5_fingerprint(public_key)
}

pub(crate) fn list_firewalls(shared: &Shared, call: &Call) -> Reply {
    let sel = match selector(call) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let items = lock(&shared.inventory)
        .firewalls
        .values()
        .filter(|f| name_filter(call, &f.name) && selected(&sel, &f.labels))
        .map(firewall_json)
        .collect();
    page(shared, call, "firewalls", items)
}

pub(crate) fn get_firewall(shared: &Shared, id: &str) -> Reply {
    let inv = lock(&shared.inventory);
    match id_of(id).and_then(|id| inv.firewalls.get(&id)) {
        Some(f) => Reply::json(200, json!({ "firewall": firewall_json(f) })),
        None => not_found("firewall"),
    }
}

pub(crate) fn create_firewall(shared: &Arc<Shared>, call: &Call) -> Reply {
    let b = &call.body;
    let Some(name) = b
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
    else {
        return invalid("name", "is required");
    };
    let labels = match labels::validate(b.get("labels").unwrap_or(&Value::Null)) {
        Ok(l) => l,
        Err(e) => return invalid("labels", &e),
    };
    let mut rules = Vec::new();
    for (i, r) in b
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        match rule(r) {
            Ok(r) => rules.push(r),
            Err(e) => return invalid(&format!("rules[{i}]"), &e),
        }
    }
    let mut inv = lock(&shared.inventory);
    let mut servers = Vec::new();
    for target in b
        .get("apply_to")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match target
            .pointer("/server/id")
            .and_then(Value::as_u64)
            .filter(|id| inv.servers.contains_key(id))
        {
            Some(id) if target["type"] == "server" => servers.push(id),
            _ => {
                return invalid(
                    "apply_to",
                    "only existing servers are supported by the fake",
                );
            }
        }
    }
    if inv.firewalls.values().any(|f| f.name == name) {
        return not_unique("name", "firewall name is already used");
    }
    let id = inv.next_id();
    for s in &servers {
        if let Some(server) = inv.servers.get_mut(s) {
            server.firewalls.push(id);
        }
    }
    let firewall = Firewall {
        id,
        name: name.to_owned(),
        labels,
        rules,
        applied_to: servers.into_iter().collect(),
        created: now_rfc3339(),
    };
    let rendered = firewall_json(&firewall);
    inv.firewalls.insert(id, firewall);
    Reply::json(201, json!({ "firewall": rendered, "actions": [] }))
}

pub(crate) fn delete_firewall(shared: &Shared, id: &str) -> Reply {
    let mut inv = lock(&shared.inventory);
    let Some(f) = id_of(id).and_then(|id| inv.firewalls.get(&id)) else {
        return not_found("firewall");
    };
    if !f.applied_to.is_empty() {
        return Reply::error(
            422,
            "resource_in_use",
            "firewall is still applied to a resource",
        );
    }
    let id = f.id;
    inv.firewalls.remove(&id);
    Reply::no_content()
}

/// A rule as the API stores it, or what is wrong with it.
fn rule(r: &Value) -> Result<Value, String> {
    let direction = r
        .get("direction")
        .and_then(Value::as_str)
        .filter(|d| matches!(*d, "in" | "out"))
        .ok_or("direction must be `in` or `out`")?;
    let protocol = r
        .get("protocol")
        .and_then(Value::as_str)
        .filter(|p| matches!(*p, "tcp" | "udp" | "icmp" | "esp" | "gre"))
        .ok_or("unknown protocol")?;
    let port = r.get("port").and_then(Value::as_str);
    match (matches!(protocol, "tcp" | "udp"), port) {
        (true, Some(p)) if p.split('-').all(|n| n.parse::<u16>().is_ok_and(|n| n > 0)) => {}
        (true, _) => return Err("port is required for tcp and udp".into()),
        (false, Some(_)) => return Err("port is only allowed for tcp and udp".into()),
        (false, None) => {}
    }
    let ips = |k: &str| {
        r.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (source, destination) = (ips("source_ips"), ips("destination_ips"));
    let cidr_ok = |v: &Value| v.as_str().is_some_and(|s| s.contains('/'));
    if !source.iter().chain(&destination).all(cidr_ok) {
        return Err("IPs must be CIDR blocks".into());
    }
    match direction {
        "in" if source.is_empty() || !destination.is_empty() => {
            return Err("an inbound rule needs source_ips only".into());
        }
        "out" if destination.is_empty() || !source.is_empty() => {
            return Err("an outbound rule needs destination_ips only".into());
        }
        _ => {}
    }
    Ok(json!({
        "direction": direction, "protocol": protocol, "port": port, "source_ips": source,
        "destination_ips": destination, "description": r.get("description").cloned().unwrap_or(Value::Null),
    }))
}
