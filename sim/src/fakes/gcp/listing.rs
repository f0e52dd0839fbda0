//! Reads of the fake's instances: get, the zonal list and the aggregated list (instances
//! grouped under `zones/<zone>`, a warning for empty zones), with the API's filter
//! expressions on `name`, `status` and labels, rendered like the Compute API (external address once `STAGING`).
use serde_json::{Value, json};

use super::state::{Instance, error};
use super::wire::{not_found, page_of};
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
    let inv = lock(&shared.inventory);
    let items: Vec<&Instance> = inv
        .instances
        .values()
        .filter(|i| i.zone == zone && matches(&filter, i))
        .collect();
    page_of(shared, call, "compute#instanceList", items, |i| {
        render(shared, i)
    })
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

/// A list filter as the Compute API reads it: comparisons (`name = "a"`,
/// `labels.KEY != "VALUE"`, `status = RUNNING`; quotes optional), each in parentheses when
/// there are several, joined by `AND` (also implied by a space) and `OR`, which binds
/// tighter (as in Google's filter grammar, AIP-160). Held as all-of groups of any-of
/// comparisons.
#[derive(Debug, PartialEq)]
struct Filter(Vec<Vec<Comparison>>);

#[derive(Debug, PartialEq)]
struct Comparison {
    field: String,
    equal: bool,
    value: String,
}

/// `None` when `f` is not a filter this fake (and the API) understands.
fn parse_filter(f: &str) -> Option<Filter> {
    let f = f.trim();
    if !f.starts_with('(') {
        return Some(Filter(vec![vec![comparison(f)?]]));
    }
    let mut all = Vec::new();
    let mut any = Vec::new();
    let mut rest = f;
    loop {
        let inner = rest.strip_prefix('(')?;
        let close = inner.find(')')?;
        any.push(comparison(&inner[..close])?);
        rest = inner[close + 1..].trim_start();
        if rest.is_empty() {
            break;
        }
        if let Some(r) = rest.strip_prefix("OR ") {
            rest = r.trim_start();
            continue;
        }
        all.push(std::mem::take(&mut any));
        if let Some(r) = rest.strip_prefix("AND ") {
            rest = r.trim_start();
        }
    }
    all.push(any);
    Some(Filter(all))
}

/// `field = value` or `field != value`, for `name`, `status` and `labels.KEY`.
fn comparison(c: &str) -> Option<Comparison> {
    let (lhs, rhs, equal) = match c.split_once("!=") {
        Some((l, r)) => (l, r, false),
        None => {
            let (l, r) = c.split_once('=')?;
            (l, r, true)
        }
    };
    let field = lhs.trim();
    let known = matches!(field, "name" | "status")
        || field
            .strip_prefix("labels.")
            .is_some_and(|k| !k.trim().is_empty());
    let value = rhs.trim().trim_matches('"');
    known.then(|| Comparison {
        field: field.to_owned(),
        equal,
        value: value.to_owned(),
    })
}

fn matches(filter: &Option<Filter>, i: &Instance) -> bool {
    let holds = |c: &Comparison| {
        let actual = match c.field.as_str() {
            "name" => Some(&i.name),
            "status" => Some(&i.status),
            f => f.strip_prefix("labels.").and_then(|k| i.labels.get(k)),
        };
        (actual.map(String::as_str) == Some(c.value.as_str())) == c.equal
    };
    filter
        .as_ref()
        .is_none_or(|Filter(all)| all.iter().all(|any| any.iter().any(holds)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(field: &str, equal: bool, value: &str) -> Comparison {
        Comparison {
            field: field.into(),
            equal,
            value: value.into(),
        }
    }

    #[test]
    fn filters_parse_as_the_compute_api_reads_them() {
        assert_eq!(
            parse_filter(r#"labels.levelrail-control-plane = "cp1""#),
            Some(Filter(vec![vec![cmp(
                "labels.levelrail-control-plane",
                true,
                "cp1"
            )]]))
        );
        assert_eq!(
            parse_filter(r#"(name = "a") OR (name = "b") (status != RUNNING)"#),
            Some(Filter(vec![
                vec![cmp("name", true, "a"), cmp("name", true, "b")],
                vec![cmp("status", false, "RUNNING")],
            ]))
        );
        assert_eq!(parse_filter("cpuPlatform = x"), None);
        assert_eq!(parse_filter("(name = \"a\""), None);
        assert_eq!(parse_filter("name"), None);
    }
}
