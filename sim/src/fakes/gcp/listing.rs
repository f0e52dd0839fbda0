//! Reads of the fake's instances: get, the zonal list and the aggregated list (instances
//! grouped under `zones/<zone>`, a warning for empty zones), with a `labels.KEY = "VALUE"`
//! filter, rendered like the Compute API (external address once `STAGING`).
use serde_json::{Value, json};

use super::state::{Instance, error};
use super::wire::{not_found, page};
use super::{Shared, catalog};
use crate::fakes::edge::{Call, Reply, lock};

pub(crate) fn get(shared: &Shared, zone: &str, name: &str) -> Reply {
    let inv = lock(&shared.inventory);
    match inv.instances.get(&format!("{zone}/{name}")) {
        Some(i) => Reply::json(200, render(shared, i)),
        None => not_found(&format!(
            "projects/{}/zones/{zone}/instances/{name}",
            shared.cfg.project_id
        )),
    }
}

pub(crate) fn list(shared: &Shared, call: &Call, zone: &str) -> Reply {
    let filter = match call.param("filter").map(parse_filter) {
        Some(None) => {
            return Reply::json(
                400,
                error(400, "invalid", "Invalid value for field 'filter'."),
            );
        }
        other => other.flatten(),
    };
    let items: Vec<Value> = lock(&shared.inventory)
        .instances
        .values()
        .filter(|i| i.zone == zone && matches(&filter, i))
        .map(|i| render(shared, i))
        .collect();
    page(shared, call, "compute#instanceList", items)
}

/// `GET aggregated/instances`: every zone, instances grouped under `zones/<zone>`.
pub(crate) fn aggregated(shared: &Shared, call: &Call) -> Reply {
    let filter = match call.param("filter").map(parse_filter) {
        Some(None) => {
            return Reply::json(
                400,
                error(400, "invalid", "Invalid value for field 'filter'."),
            );
        }
        other => other.flatten(),
    };
    let inv = lock(&shared.inventory);
    let mut items = serde_json::Map::new();
    for (zone, _, _) in catalog::ZONES {
        let found: Vec<Value> = inv
            .instances
            .values()
            .filter(|i| i.zone == zone && matches(&filter, i))
            .map(|i| render(shared, i))
            .collect();
        let scoped = if found.is_empty() {
            json!({ "warning": { "code": "NO_RESULTS_ON_PAGE", "message": "There are no results for scope 'zones/' on this page.", "data": [{ "key": "scope", "value": format!("zones/{zone}") }] } })
        } else {
            json!({ "instances": found })
        };
        items.insert(format!("zones/{zone}"), scoped);
    }
    Reply::json(
        200,
        json!({ "kind": "compute#instanceAggregatedList", "id": format!("projects/{}/aggregated/instances", shared.cfg.project_id), "items": items }),
    )
}

/// `labels.KEY = "VALUE"` (quotes optional).
fn parse_filter(f: &str) -> Option<(String, String)> {
    let (lhs, rhs) = f.split_once('=')?;
    let key = lhs.trim().strip_prefix("labels.")?.trim();
    let value = rhs.trim().trim_matches('"');
    (!key.is_empty()).then(|| (key.to_owned(), value.to_owned()))
}

fn matches(filter: &Option<(String, String)>, i: &Instance) -> bool {
    filter
        .as_ref()
        .is_none_or(|(k, v)| i.labels.get(k) == Some(v))
}

fn render(shared: &Shared, i: &Instance) -> Value {
    let base = shared.compute_base();
    let project = &shared.cfg.project_id;
    let zone_url = format!("{base}/projects/{project}/zones/{}", i.zone);
    let mut nic = json!({ "kind": "compute#networkInterface", "name": "nic0", "network": format!("{base}/projects/{project}/global/networks/default"), "networkIP": format!("10.128.0.{}", 2 + i.id % 250), "stackType": "IPV4_ONLY" });
    let configs: Vec<Value> = i
        .body
        .pointer("/networkInterfaces/0/accessConfigs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let mut c = c.clone();
            c["kind"] = json!("compute#accessConfig");
            c["networkTier"] = json!("PREMIUM");
            if !i.nat_ip.is_empty() {
                c["natIP"] = json!(i.nat_ip);
            }
            c
        })
        .collect();
    nic["accessConfigs"] = json!(configs);
    json!({
        "kind": "compute#instance", "id": format!("{}", 9_000_000 + i.id), "name": i.name, "zone": zone_url, "status": i.status,
        "creationTimestamp": "2026-01-01T00:00:00.000-08:00",
        "machineType": format!("{base}/projects/{project}/{}", i.body["machineType"].as_str().unwrap_or_default().trim_start_matches('/')),
        "networkInterfaces": [nic],
        "disks": [{ "kind": "compute#attachedDisk", "type": "PERSISTENT", "mode": "READ_WRITE", "boot": true, "autoDelete": true, "deviceName": "persistent-disk-0", "index": 0,
                    "source": format!("{zone_url}/disks/{}", i.name), "diskSizeGb": i.body.pointer("/disks/0/initializeParams/diskSizeGb").cloned().unwrap_or(json!("10")) }],
        "metadata": { "kind": "compute#metadata", "fingerprint": "fp", "items": i.body.pointer("/metadata/items").cloned().unwrap_or(json!([])) },
        "labels": i.labels, "labelFingerprint": "fp",
        "tags": { "items": i.body.pointer("/tags/items").cloned().unwrap_or(json!([])), "fingerprint": "fp" },
        "selfLink": format!("{zone_url}/instances/{}", i.name),
    })
}
