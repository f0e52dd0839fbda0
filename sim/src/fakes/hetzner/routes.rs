//! Routing of the fake Hetzner API, bearer authentication (401 `unauthorized`; a read-only
//! token gets 401 `token_readonly` on anything but GET, as documented), paging with
//! `page` / `per_page` and `meta.pagination`, and the catalog endpoints.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::api::{Call, Reply, Shared};
use super::catalog::{self, LOCATIONS, SERVER_TYPES};
use super::labels::Selector;
use super::{resources, servers};

/// Answers one authenticated-or-not call.
pub(crate) fn handle(shared: &Arc<Shared>, call: &Call) -> Reply {
    if let Some(refused) = authenticate(shared, call) {
        return refused;
    }
    let segs: Vec<&str> = call.segments.iter().map(String::as_str).collect();
    match (call.method.as_str(), segs.as_slice()) {
        ("GET", ["locations"]) => {
            let items = LOCATIONS
                .iter()
                .filter(|l| name_filter(call, l.name))
                .map(catalog::location_json)
                .collect();
            page(shared, call, "locations", items)
        }
        ("GET", ["locations", id]) => match LOCATIONS.iter().find(|l| l.id.to_string() == *id) {
            Some(l) => Reply::json(200, json!({ "location": catalog::location_json(l) })),
            None => not_found("location"),
        },
        ("GET", ["server_types"]) => {
            let items = SERVER_TYPES
                .iter()
                .filter(|t| name_filter(call, t.name))
                .map(catalog::server_type_json)
                .collect();
            page(shared, call, "server_types", items)
        }
        ("GET", ["server_types", id]) => {
            match SERVER_TYPES.iter().find(|t| t.id.to_string() == *id) {
                Some(t) => Reply::json(200, json!({ "server_type": catalog::server_type_json(t) })),
                None => not_found("server type"),
            }
        }
        ("GET", ["servers"]) => servers::list(shared, call),
        ("POST", ["servers"]) => servers::create(shared, call),
        ("GET", ["servers", id]) => servers::get(shared, id),
        ("DELETE", ["servers", id]) => servers::delete(shared, id),
        ("GET", ["ssh_keys"]) => resources::list_keys(shared, call),
        ("POST", ["ssh_keys"]) => resources::create_key(shared, call),
        ("GET", ["ssh_keys", id]) => resources::get_key(shared, id),
        ("DELETE", ["ssh_keys", id]) => resources::delete_key(shared, id),
        ("GET", ["firewalls"]) => resources::list_firewalls(shared, call),
        ("POST", ["firewalls"]) => resources::create_firewall(shared, call),
        ("GET", ["firewalls", id]) => resources::get_firewall(shared, id),
        ("DELETE", ["firewalls", id]) => resources::delete_firewall(shared, id),
        (
            _,
            [
                "locations" | "server_types" | "servers" | "ssh_keys" | "firewalls",
                ..,
            ],
        ) => Reply::error(
            405,
            "method_not_allowed",
            "the request method is not allowed",
        ),
        _ => Reply::error(404, "not_found", "not found"),
    }
}

fn authenticate(shared: &Shared, call: &Call) -> Option<Reply> {
    if call.authorization.as_deref() != Some(&format!("Bearer {}", shared.token)) {
        return Some(Reply::error(401, "unauthorized", "unable to authenticate"));
    }
    if shared.read_only && call.method != "GET" {
        return Some(Reply::error(
            401,
            "token_readonly",
            "the token is only allowed to perform GET requests",
        ));
    }
    None
}

/// 404 `not_found` for a missing `what`.
pub(crate) fn not_found(what: &str) -> Reply {
    Reply::error(404, "not_found", &format!("{what} not found"))
}

/// 422 `invalid_input` naming the field.
pub(crate) fn invalid(field: &str, problem: &str) -> Reply {
    let mut r = Reply::error(
        422,
        "invalid_input",
        &format!("invalid input in field '{field}': {problem}"),
    );
    r.body["error"]["details"] = json!({ "fields": [{ "name": field, "messages": [problem] }] });
    r
}

/// 409 `uniqueness_error` naming the field.
pub(crate) fn not_unique(field: &str, message: &str) -> Reply {
    let mut r = Reply::error(409, "uniqueness_error", message);
    r.body["error"]["details"] = json!({ "fields": [{ "name": field }] });
    r
}

/// Whether the `name` query parameter (if any) equals `name`.
pub(crate) fn name_filter(call: &Call, name: &str) -> bool {
    call.param("name").is_none_or(|n| n == name)
}

/// The `label_selector` query parameter, if any (`Err`: an answer refusing it).
pub(crate) fn selector(call: &Call) -> Result<Option<Selector>, Reply> {
    call.param("label_selector")
        .map(|s| Selector::parse(s).map_err(|e| invalid("label_selector", &e)))
        .transpose()
}

/// Whether `labels` pass the selector (no selector: everything does).
pub(crate) fn selected(sel: &Option<Selector>, labels: &BTreeMap<String, String>) -> bool {
    sel.as_ref().is_none_or(|s| s.matches(labels))
}

/// One page of `items` under `key`, with `meta.pagination`.
pub(crate) fn page(shared: &Shared, call: &Call, key: &str, items: Vec<Value>) -> Reply {
    let number = |name: &str, default: u64| match call.param(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| invalid(name, "must be a positive integer")),
    };
    let (page, per_page) = match (number("page", 1), number("per_page", 25)) {
        (Ok(p), Ok(pp)) => (p, pp.min(shared.max_per_page)),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let total = items.len() as u64;
    let last = total.div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip(((page - 1) * per_page) as usize)
        .take(per_page as usize)
        .collect();
    Reply::json(
        200,
        json!({
            key: slice,
            "meta": { "pagination": {
                "page": page, "per_page": per_page,
                "previous_page": if page > 1 { Some(page - 1) } else { None },
                "next_page": if page < last { Some(page + 1) } else { None },
                "last_page": last, "total_entries": total,
            } },
        }),
    )
}

/// A numeric path id.
pub(crate) fn id_of(raw: &str) -> Option<u64> {
    raw.parse().ok()
}
