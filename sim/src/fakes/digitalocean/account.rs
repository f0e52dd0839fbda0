//! The account: GET /v2/account, SSH keys (`/v2/account/keys`: one key per key material,
//! addressed by id or MD5 fingerprint) and tags (`/v2/tags`: created on demand, invalid
//! names refused with 400 and DigitalOcean's `error_with_root_causes` body; taken off
//! droplets with `DELETE /v2/tags/{tag}/resources`).
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::catalog::page;
use super::state::{
    Inventory, KeyRecord, Shared, bad_body, json, no_content, not_found, parse_body, unprocessable,
    valid_tag,
};
use crate::fakes::fingerprint::md5_fingerprint;

/// GET /v2/account.
pub(super) async fn get_account(State(shared): State<Arc<Shared>>) -> Response {
    json(
        StatusCode::OK,
        json!({ "account": {
            "droplet_limit": shared.droplet_limit,
            "floating_ip_limit": 3,
            "email": "operator@levelrail.example",
            "name": "Levelrail Operator",
            "uuid": "5df3e3004a17e242b7c20ca6c9fc25b701a47ece",
            "email_verified": true,
            "status": "active",
            "status_message": "",
            "team": { "uuid": "a1c2e3f4a17e242b7c20ca6c9fc25b701a47ece5", "name": "Levelrail Fake Team" },
        }}),
    )
}

/// GET /v2/account/keys.
pub(super) async fn list_keys(
    State(shared): State<Arc<Shared>>,
    RawQuery(q): RawQuery,
) -> Response {
    let items = shared.inventory().keys.iter().map(key_json).collect();
    json(
        StatusCode::OK,
        page(&shared, "/v2/account/keys", "ssh_keys", items, q.as_deref()),
    )
}

/// POST /v2/account/keys.
pub(super) async fn create_key(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Some(body) = parse_body(&body) else {
        return bad_body();
    };
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    let public_key = body
        .get("public_key")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    if name.is_empty() {
        return unprocessable("Name can't be blank");
    }
    let Some(fingerprint) = md5_fingerprint(&public_key) else {
        return unprocessable("Key invalid, key should be of the format `type key [comment]`");
    };
    let mut inv = shared.inventory();
    if inv.keys.iter().any(|k| k.fingerprint == fingerprint) {
        return unprocessable("SSH Key is already in use on your account");
    }
    let id = 41_000_000 + inv.next();
    let record = KeyRecord {
        id,
        name,
        public_key,
        fingerprint,
    };
    inv.keys.push(record.clone());
    json(StatusCode::CREATED, json!({ "ssh_key": key_json(&record) }))
}

/// GET /v2/account/keys/{id or fingerprint}.
pub(super) async fn get_key(
    State(shared): State<Arc<Shared>>,
    Path(key): Path<String>,
) -> Response {
    let inv = shared.inventory();
    match find_key(&inv, &key) {
        Some(i) => json(StatusCode::OK, json!({ "ssh_key": key_json(&inv.keys[i]) })),
        None => not_found(),
    }
}

/// DELETE /v2/account/keys/{id or fingerprint}.
pub(super) async fn delete_key(
    State(shared): State<Arc<Shared>>,
    Path(key): Path<String>,
) -> Response {
    let mut inv = shared.inventory();
    match find_key(&inv, &key) {
        Some(i) => {
            inv.keys.remove(i);
            no_content()
        }
        None => not_found(),
    }
}

fn find_key(inv: &Inventory, key: &str) -> Option<usize> {
    inv.keys
        .iter()
        .position(|k| k.fingerprint == key || k.id.to_string() == key)
}

fn key_json(k: &KeyRecord) -> Value {
    json!({ "id": k.id, "fingerprint": k.fingerprint, "public_key": k.public_key, "name": k.name })
}

/// POST /v2/tags: 201 with the tag (also when it already exists).
pub(super) async fn create_tag(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Some(body) = parse_body(&body) else {
        return bad_body();
    };
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !valid_tag(&name) {
        let reason = format!(
            "Error validating resource tag: \"tag-name {name:?} contains invalid characters\""
        );
        return json(
            StatusCode::BAD_REQUEST,
            json!({ "error": reason, "messages": null, "root_causes": [format!("rpc error: code = InvalidArgument desc = {reason}")] }),
        );
    }
    let mut inv = shared.inventory();
    inv.tags.insert(name.clone());
    json(StatusCode::CREATED, json!({ "tag": tag_json(&inv, &name) }))
}

/// GET /v2/tags/{tag_id}.
pub(super) async fn get_tag(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Response {
    let inv = shared.inventory();
    if inv.tags.contains(&name) {
        json(StatusCode::OK, json!({ "tag": tag_json(&inv, &name) }))
    } else {
        not_found()
    }
}

/// DELETE /v2/tags/{tag_id}: the tag goes, and comes off every droplet and firewall.
pub(super) async fn delete_tag(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Response {
    let mut inv = shared.inventory();
    if !inv.tags.remove(&name) {
        return not_found();
    }
    for d in inv.droplets.values_mut() {
        d.tags.retain(|t| *t != name);
    }
    for f in &mut inv.firewalls {
        f.tags.retain(|t| *t != name);
    }
    no_content()
}

/// The `resource_type`s of DigitalOcean's untag body.
const RESOURCE_TYPES: [&str; 4] = ["droplet", "image", "volume", "volume_snapshot"];

/// DELETE /v2/tags/{tag_id}/resources: the tag comes off each resource of `resources`
/// (each a string `resource_id` and a `resource_type`), 204. An unknown tag is 404, and so
/// is a resource the account does not have (the fake keeps no images or volumes); then
/// nothing comes off. A resource that does not carry the tag is left as it is.
pub(super) async fn untag_resources(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some(resources) = parse_body(&body)
        .as_ref()
        .and_then(|b| b.get("resources"))
        .and_then(Value::as_array)
        .cloned()
    else {
        return bad_body();
    };
    let mut ids = Vec::with_capacity(resources.len());
    for r in &resources {
        let id = r.get("resource_id").and_then(Value::as_str);
        let kind = r.get("resource_type").and_then(Value::as_str);
        match (id, kind) {
            (Some(id), Some(kind)) if RESOURCE_TYPES.contains(&kind) => ids.push((id, kind)),
            _ => {
                return unprocessable(&format!(
                    "each resource needs a resource_id and a resource_type of {}",
                    RESOURCE_TYPES.join(", ")
                ));
            }
        }
    }
    let mut inv = shared.inventory();
    if !inv.tags.contains(&name) {
        return not_found();
    }
    let mut droplets = Vec::with_capacity(ids.len());
    for (id, kind) in ids {
        match id.parse::<u64>() {
            Ok(id) if kind == "droplet" && inv.droplets.contains_key(&id) => droplets.push(id),
            _ => return not_found(),
        }
    }
    for id in droplets {
        if let Some(d) = inv.droplets.get_mut(&id) {
            d.tags.retain(|t| *t != name);
        }
    }
    no_content()
}

fn tag_json(inv: &Inventory, name: &str) -> Value {
    let droplets = inv
        .droplets
        .values()
        .filter(|d| d.tags.iter().any(|t| t == name))
        .count();
    let zero = json!({ "count": 0 });
    json!({
        "name": name,
        "resources": {
            "count": droplets,
            "droplets": { "count": droplets },
            "images": zero,
            "volumes": zero,
            "volume_snapshots": zero,
            "databases": zero,
        },
    })
}
