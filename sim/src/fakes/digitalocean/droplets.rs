//! Droplets: create (202 with `links.actions`, validated like DigitalOcean does: region,
//! size in that region, image, keys, tags, user-data size, droplet limit), get, list (by
//! `tag_name` or `name`, paged) and delete. A region of `full_regions` refuses a valid
//! create with DigitalOcean's "currently unavailable for new Droplets" 422. A droplet is `new` for `state_step`, then
//! `active` with its networks, and the boot hook runs once with its user-data.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::catalog::{find_size, image_json, page_of, region_available, region_json, size_json};
use super::state::{
    DropletRecord, REGION_UNAVAILABLE, Shared, bad_body, error, json, not_found, now_rfc3339,
    parse_body, query_pairs, unprocessable, uuid, valid_tag,
};
use crate::fakes::BootEvent;

/// DigitalOcean refuses user-data above 64 KiB.
const MAX_USER_DATA: usize = 64 * 1024;

/// POST /v2/droplets (single create).
pub(super) async fn create(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Some(body) = parse_body(&body) else {
        return bad_body();
    };
    let record = match validate_and_insert(&shared, &body) {
        Ok(r) => r,
        Err(message) => return unprocessable(&message),
    };
    let droplet = droplet_json(&record);
    let action = shared.inventory().next() + 3_000_000_000;
    let links = json!({ "actions": [{ "id": action, "rel": "create", "href": format!("{}/v2/actions/{action}", shared.origin) }] });
    schedule_boot(&shared);
    json(
        StatusCode::ACCEPTED,
        json!({ "droplet": droplet, "links": links }),
    )
}

/// The new droplet, or the message of DigitalOcean's 422.
fn validate_and_insert(shared: &Shared, body: &Value) -> Result<DropletRecord, String> {
    let text = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (name, region, size, image) = (text("name"), text("region"), text("size"), text("image"));
    if name.is_empty() || !valid_hostname(&name) {
        return Err("Name is invalid. Names must be valid hostnames.".into());
    }
    if !region_available(&region) {
        return Err("Region is not available".into());
    }
    let Some(spec) = find_size(&size) else {
        return Err("You specified an invalid size for Droplet creation.".into());
    };
    if !spec.available || !spec.regions.contains(&region.as_str()) {
        return Err("Size is not available in this region.".into());
    }
    if image_json(&image).is_none() {
        return Err("You specified an invalid image for Droplet creation.".into());
    }
    let user_data = text("user_data");
    if user_data.len() > MAX_USER_DATA {
        return Err("user_data must not exceed 64 KiB".into());
    }
    let tags: Vec<String> = strings(body.get("tags"));
    if let Some(bad) = tags.iter().find(|t| !valid_tag(t)) {
        return Err(format!("tag {bad:?} contains invalid characters"));
    }
    if shared.full_regions.contains(&region) {
        return Err(REGION_UNAVAILABLE.into());
    }
    let mut inv = shared.inventory();
    let ssh_keys: Vec<u64> = body
        .get("ssh_keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    if ssh_keys
        .iter()
        .any(|id| !inv.keys.iter().any(|k| k.id == *id))
    {
        return Err("SSH key could not be found.".into());
    }
    if inv.droplets.len() >= shared.droplet_limit {
        return Err(format!(
            "creating this/these droplet(s) will exceed your droplet limit ({})",
            shared.droplet_limit
        ));
    }
    let n = inv.next();
    let record = DropletRecord {
        id: 500_000_000 + n,
        name,
        region,
        size,
        image,
        tags: tags.clone(),
        ssh_keys,
        user_data,
        status: "new".into(),
        created: Instant::now(),
        created_at: now_rfc3339(),
        public_ipv4: format!("198.18.{}.{}", (n / 250) % 256, n % 250 + 2),
        private_ipv4: format!("10.110.{}.{}", (n / 250) % 256, n % 250 + 2),
        booted: false,
    };
    inv.tags.extend(tags);
    inv.droplets.insert(record.id, record.clone());
    Ok(record)
}

/// `^[a-zA-Z0-9]?[a-z0-9A-Z.\-]*[a-z0-9A-Z]$`, at most 255.
fn valid_hostname(name: &str) -> bool {
    name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Moves the droplet to `active` after `state_step`, whether or not anyone reads it.
fn schedule_boot(shared: &Arc<Shared>) {
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        tokio::time::sleep(shared.state_step).await;
        advance(&shared);
    });
}

/// Applies due state changes and runs the boot hook for droplets that just became active.
pub(super) fn advance(shared: &Shared) {
    let now = Instant::now();
    let mut booted = Vec::new();
    {
        let mut inv = shared.inventory();
        for d in inv.droplets.values_mut() {
            if d.status == "new" && now.saturating_duration_since(d.created) >= shared.state_step {
                d.status = "active".into();
            }
            if d.status == "active" && !d.booted {
                d.booted = true;
                booted.push(BootEvent {
                    server_id: d.id.to_string(),
                    name: d.name.clone(),
                    user_data: d.user_data.clone(),
                    ipv4: d.public_ipv4.clone(),
                });
            }
        }
    }
    if let Some(hook) = &shared.boot_hook {
        for event in booted {
            hook(event);
        }
    }
}

/// GET /v2/droplets/{id}.
pub(super) async fn get(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    advance(&shared);
    let record = id
        .parse::<u64>()
        .ok()
        .and_then(|id| shared.inventory().droplets.get(&id).cloned());
    match record {
        Some(d) => json(StatusCode::OK, json!({ "droplet": droplet_json(&d) })),
        None => not_found(),
    }
}

/// GET /v2/droplets (`tag_name` or `name` filter, paged).
pub(super) async fn list(State(shared): State<Arc<Shared>>, RawQuery(q): RawQuery) -> Response {
    advance(&shared);
    let params = query_pairs(q.as_deref());
    if params.contains_key("tag_name")
        && (params.contains_key("name") || params.contains_key("type"))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "tag_name cannot be combined with name or type",
        );
    }
    let inventory = shared.inventory();
    let records: Vec<&DropletRecord> = inventory
        .droplets
        .values()
        .filter(|d| params.get("tag_name").is_none_or(|t| d.tags.contains(t)))
        .filter(|d| {
            params
                .get("name")
                .is_none_or(|n| d.name.eq_ignore_ascii_case(n))
        })
        .collect();
    let body = page_of(
        &shared,
        "/v2/droplets",
        "droplets",
        records,
        droplet_json,
        q.as_deref(),
    );
    drop(inventory);
    json(StatusCode::OK, body)
}

/// DELETE /v2/droplets/{id}: gone at once, and out of every firewall.
pub(super) async fn delete(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return not_found();
    };
    let mut inv = shared.inventory();
    if inv.droplets.remove(&id).is_none() {
        return not_found();
    }
    for fw in &mut inv.firewalls {
        fw.droplet_ids.retain(|d| *d != id);
    }
    json_no_content()
}

fn json_no_content() -> Response {
    let mut resp = Response::new(axum::body::Body::empty());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// The `droplet` object. Networks are assigned once the droplet is active.
pub(super) fn droplet_json(d: &DropletRecord) -> Value {
    let size = find_size(&d.size).map(size_json).unwrap_or(Value::Null);
    let v4 = if d.status == "new" {
        json!([])
    } else {
        let public_gateway = format!(
            "{}.1",
            d.public_ipv4
                .rsplit_once('.')
                .map_or("198.18.0", |(net, _)| net)
        );
        json!([
            { "ip_address": d.private_ipv4, "netmask": "255.255.240.0", "type": "private" },
            { "ip_address": d.public_ipv4, "netmask": "255.255.255.0", "gateway": public_gateway, "type": "public" },
        ])
    };
    // One default VPC per region.
    let vpc = uuid(
        d.region
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
            & 0xffff_ffff,
    );
    json!({
        "id": d.id,
        "name": d.name,
        "memory": size["memory"],
        "vcpus": size["vcpus"],
        "disk": size["disk"],
        "disk_info": size["disk_info"],
        "locked": false,
        "status": d.status,
        "kernel": null,
        "created_at": d.created_at,
        "features": ["droplet_agent", "private_networking"],
        "backup_ids": [],
        "next_backup_window": null,
        "snapshot_ids": [],
        "image": image_json(&d.image).unwrap_or(Value::Null),
        "volume_ids": [],
        "size": size,
        "size_slug": d.size,
        "networks": { "v4": v4, "v6": [] },
        "region": region_json(&d.region),
        "tags": d.tags,
        "vpc_uuid": vpc,
    })
}
