//! Cloud firewalls: create (202, `waiting`), list (paged), get, delete, and adding droplets
//! or tags. Names follow DigitalOcean's rule (alphanumeric first, then alphanumerics, `.`
//! and `-`) and are not unique; referenced tags and droplets must exist.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::catalog::page;
use super::state::{
    FirewallRecord, Inventory, Shared, bad_body, error, json, no_content, not_found, now_rfc3339,
    parse_body, uuid,
};

/// POST /v2/firewalls.
pub(super) async fn create(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Some(body) = parse_body(&body) else {
        return bad_body();
    };
    let mut inv = shared.inventory();
    let record = match validate(&inv, &body) {
        Ok(r) => r,
        Err(message) => return error(StatusCode::BAD_REQUEST, "bad_request", &message),
    };
    let n = inv.next();
    let record = FirewallRecord {
        id: uuid(n),
        created_at: now_rfc3339(),
        ..record
    };
    inv.firewalls.push(record.clone());
    json(
        StatusCode::ACCEPTED,
        json!({ "firewall": firewall_json(&record, "waiting") }),
    )
}

fn validate(inv: &Inventory, body: &Value) -> Result<FirewallRecord, String> {
    let name = body.get("name").and_then(Value::as_str).unwrap_or_default();
    let mut chars = name.chars();
    let name_ok = name.len() >= 2
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    if !name_ok {
        return Err("name must begin with an alphanumeric character and contain only alphanumerics, '.' and '-'".into());
    }
    if body.get("inbound_rules").is_none() && body.get("outbound_rules").is_none() {
        return Err("at least one inbound or outbound rule is required".into());
    }
    let inbound_rules = rules(body.get("inbound_rules"), "sources")?;
    let outbound_rules = rules(body.get("outbound_rules"), "destinations")?;
    let tags = strings(body.get("tags"));
    check_tags(inv, &tags)?;
    let droplet_ids = ids(body.get("droplet_ids"));
    check_droplets(inv, &droplet_ids)?;
    Ok(FirewallRecord {
        id: String::new(),
        name: name.to_owned(),
        inbound_rules,
        outbound_rules,
        droplet_ids,
        tags,
        created_at: String::new(),
    })
}

fn rules(v: Option<&Value>, target: &str) -> Result<Vec<Value>, String> {
    let rules = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(rules)) => rules.clone(),
        Some(_) => return Err("rules must be an array".into()),
    };
    for rule in &rules {
        let protocol = rule
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !matches!(protocol, "tcp" | "udp" | "icmp") {
            return Err(format!("invalid protocol {protocol:?}"));
        }
        if protocol != "icmp" && !rule.get("ports").is_some_and(Value::is_string) {
            return Err("ports must be a string".into());
        }
        if !rule.get(target).is_some_and(Value::is_object) {
            return Err(format!("each rule needs {target}"));
        }
    }
    Ok(rules)
}

fn check_tags(inv: &Inventory, tags: &[String]) -> Result<(), String> {
    match tags.iter().find(|t| !inv.tags.contains(*t)) {
        Some(t) => Err(format!("tag {t:?} does not exist")),
        None => Ok(()),
    }
}

fn check_droplets(inv: &Inventory, ids: &[u64]) -> Result<(), String> {
    match ids.iter().find(|id| !inv.droplets.contains_key(id)) {
        Some(id) => Err(format!("droplet {id} does not exist")),
        None => Ok(()),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn ids(v: Option<&Value>) -> Vec<u64> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect()
}

/// GET /v2/firewalls.
pub(super) async fn list(State(shared): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    let items = shared
        .inventory()
        .firewalls
        .iter()
        .map(|f| firewall_json(f, "succeeded"))
        .collect();
    json(
        StatusCode::OK,
        page(&shared, "/v2/firewalls", "firewalls", items, q.as_deref()),
    )
}

/// GET /v2/firewalls/{id}.
pub(super) async fn get(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.inventory().firewalls.iter().find(|f| f.id == id) {
        Some(f) => json(
            StatusCode::OK,
            json!({ "firewall": firewall_json(f, "succeeded") }),
        ),
        None => not_found(),
    }
}

/// DELETE /v2/firewalls/{id}.
pub(super) async fn delete(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut inv = shared.inventory();
    let before = inv.firewalls.len();
    inv.firewalls.retain(|f| f.id != id);
    if inv.firewalls.len() == before {
        not_found()
    } else {
        no_content()
    }
}

/// POST /v2/firewalls/{id}/droplets.
pub(super) async fn add_droplets(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    update(&shared, &id, &body, |inv, fw, body| {
        let ids = ids(body.get("droplet_ids"));
        check_droplets(inv, &ids)?;
        for id in ids {
            if !fw.droplet_ids.contains(&id) {
                fw.droplet_ids.push(id);
            }
        }
        Ok(())
    })
}

/// POST /v2/firewalls/{id}/tags.
pub(super) async fn add_tags(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    update(&shared, &id, &body, |inv, fw, body| {
        let tags = strings(body.get("tags"));
        check_tags(inv, &tags)?;
        for t in tags {
            if !fw.tags.contains(&t) {
                fw.tags.push(t);
            }
        }
        Ok(())
    })
}

fn update(
    shared: &Shared,
    id: &str,
    body: &[u8],
    change: impl FnOnce(&Inventory, &mut FirewallRecord, &Value) -> Result<(), String>,
) -> Response {
    let Some(body) = parse_body(body) else {
        return bad_body();
    };
    let mut inv = shared.inventory();
    let Some(i) = inv.firewalls.iter().position(|f| f.id == id) else {
        return not_found();
    };
    let mut fw = inv.firewalls[i].clone();
    if let Err(message) = change(&inv, &mut fw, &body) {
        return error(StatusCode::BAD_REQUEST, "bad_request", &message);
    }
    inv.firewalls[i] = fw;
    no_content()
}

/// The `firewall` object.
fn firewall_json(f: &FirewallRecord, status: &str) -> Value {
    let pending: Vec<Value> = if status == "waiting" {
        f.droplet_ids
            .iter()
            .map(|id| json!({ "droplet_id": id, "removing": false, "status": "waiting" }))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "id": f.id,
        "name": f.name,
        "status": status,
        "inbound_rules": f.inbound_rules,
        "outbound_rules": f.outbound_rules,
        "created_at": f.created_at,
        "droplet_ids": f.droplet_ids,
        "tags": f.tags,
        "pending_changes": pending,
    })
}
