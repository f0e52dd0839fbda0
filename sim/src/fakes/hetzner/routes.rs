//! Routing of the fake Hetzner API, bearer authentication (401 `unauthorized`; a read-only
//! token gets 401 `token_readonly` on anything but GET, as documented), paging with
//! `page` / `per_page` and `meta.pagination`, and the catalog endpoints.
use std::sync::Arc;

use serde_json::json;

use super::catalog::{self, LOCATIONS, SERVER_TYPES};
use super::wire::{Call, Reply, Shared, name_filter, not_found, page};
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
