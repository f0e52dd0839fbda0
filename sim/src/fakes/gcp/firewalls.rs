//! Firewalls of the fake project: insert (unique names, 409 `alreadyExists`), update (PUT
//! replaces the rule) and delete, validated like the API (RFC 1035 name, the default
//! network, a direction, exactly one of `allowed` / `denied`, CIDR source ranges, a
//! priority of 0 to 65535). Operations are global and finish at once.
use std::sync::Arc;

use serde_json::{Value, json};

use super::Shared;
use super::state::error;
use super::wire::{not_found, operation, remember, valid_name};
use crate::fakes::edge::{Call, Reply, lock};

const FIELDS: [&str; 12] = [
    "name",
    "description",
    "network",
    "direction",
    "priority",
    "sourceRanges",
    "targetTags",
    "allowed",
    "denied",
    "disabled",
    "destinationRanges",
    "logConfig",
];

pub(crate) fn insert(shared: &Arc<Shared>, call: &Call) -> Reply {
    let firewall = match validate(shared, &call.json) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let name = firewall["name"].as_str().unwrap_or_default().to_owned();
    let mut inv = lock(&shared.inventory);
    if inv.firewalls.contains_key(&name) {
        return Reply::json(
            409,
            error(
                409,
                "alreadyExists",
                &format!(
                    "The resource 'projects/{}/global/firewalls/{name}' already exists",
                    shared.cfg.project_id
                ),
            ),
        );
    }
    inv.firewalls.insert(name.clone(), firewall);
    let op = inv.start("", "insert", &format!("global/firewalls/{name}"), true);
    drop(inv);
    remember(shared, call, &op);
    operation(shared, &op, false)
}

pub(crate) fn update(shared: &Arc<Shared>, call: &Call, name: &str) -> Reply {
    let mut firewall = match validate(shared, &call.json) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let mut inv = lock(&shared.inventory);
    let Some(old) = inv.firewalls.get(name) else {
        return not_found(&format!(
            "projects/{}/global/firewalls/{name}",
            shared.cfg.project_id
        ));
    };
    if firewall["name"] != json!(name) {
        return Reply::json(
            400,
            error(
                400,
                "invalid",
                "Invalid value for field 'resource.name': the name cannot change.",
            ),
        );
    }
    firewall["id"] = old["id"].clone();
    firewall["creationTimestamp"] = old["creationTimestamp"].clone();
    inv.firewalls.insert(name.to_owned(), firewall);
    let op = inv.start("", "update", &format!("global/firewalls/{name}"), true);
    drop(inv);
    remember(shared, call, &op);
    operation(shared, &op, false)
}

pub(crate) fn delete(shared: &Arc<Shared>, call: &Call, name: &str) -> Reply {
    let mut inv = lock(&shared.inventory);
    if inv.firewalls.remove(name).is_none() {
        return not_found(&format!(
            "projects/{}/global/firewalls/{name}",
            shared.cfg.project_id
        ));
    }
    let op = inv.start("", "delete", &format!("global/firewalls/{name}"), true);
    drop(inv);
    remember(shared, call, &op);
    operation(shared, &op, false)
}

/// The rule as stored and rendered, or the API's refusal.
fn validate(shared: &Shared, b: &Value) -> Result<Value, Reply> {
    let invalid = |field: &str, why: &str| {
        Reply::json(
            400,
            error(
                400,
                "invalid",
                &format!("Invalid value for field 'resource.{field}': {why}"),
            ),
        )
    };
    let Some(obj) = b.as_object() else {
        return Err(invalid("", "the body must be a Firewall"));
    };
    if let Some(k) = obj.keys().find(|k| {
        !FIELDS.contains(&k.as_str())
            && !["id", "kind", "selfLink", "creationTimestamp"].contains(&k.as_str())
    }) {
        return Err(Reply::json(
            400,
            error(
                400,
                "invalid",
                &format!(
                    "Invalid JSON payload received. Unknown name \"{k}\" at 'resource': Cannot find field."
                ),
            ),
        ));
    }
    let name = b.get("name").and_then(Value::as_str).unwrap_or_default();
    if !valid_name(name) {
        return Err(invalid(
            "name",
            "must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
        ));
    }
    let network = b
        .get("network")
        .and_then(Value::as_str)
        .unwrap_or("global/networks/default");
    if !network.ends_with("global/networks/default") || !lock(&shared.inventory).default_network {
        return Err(Reply::json(
            404,
            error(
                404,
                "notFound",
                &format!("The resource '{network}' was not found"),
            ),
        ));
    }
    let direction = b
        .get("direction")
        .and_then(Value::as_str)
        .unwrap_or("INGRESS");
    if !["INGRESS", "EGRESS"].contains(&direction) {
        return Err(invalid("direction", "must be INGRESS or EGRESS"));
    }
    let count = |k: &str| b.get(k).and_then(Value::as_array).map_or(0, Vec::len);
    if (count("allowed") > 0) == (count("denied") > 0) {
        return Err(invalid(
            "allowed",
            "exactly one of allowed or denied must be set",
        ));
    }
    let priority = b
        .get("priority")
        .map_or(Some(1000), Value::as_i64)
        .unwrap_or(-1);
    if !(0..=65535).contains(&priority) {
        return Err(invalid("priority", "must be between 0 and 65535"));
    }
    let cidr = |v: &Value| {
        v.as_str()
            .and_then(|s| s.split_once('/'))
            .is_some_and(|(ip, bits)| {
                ip.parse::<std::net::IpAddr>().is_ok() && bits.parse::<u8>().is_ok_and(|b| b <= 128)
            })
    };
    if !b
        .get("sourceRanges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(cidr)
    {
        return Err(invalid("sourceRanges", "must be CIDR ranges"));
    }
    let base = shared.compute_base();
    let project = &shared.cfg.project_id;
    let mut out = b.clone();
    let n = lock(&shared.inventory).next();
    out["kind"] = json!("compute#firewall");
    out["id"] = json!(format!("{}", 5_000_000 + n));
    out["creationTimestamp"] = json!("2026-01-01T00:00:00.000-08:00");
    out["network"] = json!(format!("{base}/projects/{project}/global/networks/default"));
    out["direction"] = json!(direction);
    out["priority"] = json!(priority);
    out["disabled"] = json!(b.get("disabled").and_then(Value::as_bool).unwrap_or(false));
    out["selfLink"] = json!(format!("{base}/projects/{project}/global/firewalls/{name}"));
    Ok(out)
}
