//! What the Compute Engine router (`compute.rs`) and the resource handlers share:
//! operations (with `wait`), `requestId` bookkeeping, paging, `notFound` answers and name
//! checks. A leaf: it imports neither the router nor a handler.
use std::time::Duration;

use serde_json::{Value, json};

use super::Shared;
use super::state::{error, operation_json};
use crate::fakes::edge::{Call, Reply, lock};

/// An operation; with `wait`, a long poll until it is `DONE`.
pub(crate) fn operation(shared: &Shared, name: &str, wait: bool) -> Reply {
    let inv = lock(&shared.inventory);
    let Some(op) = inv.operations.get(name) else {
        return not_found(&format!(
            "projects/{}/operations/{name}",
            shared.cfg.project_id
        ));
    };
    let reply = Reply::json(
        200,
        operation_json(&shared.compute_base(), &shared.cfg.project_id, op),
    );
    if wait && op.status != "DONE" {
        let poll =
            (shared.cfg.state_step / 4).clamp(Duration::from_millis(5), Duration::from_millis(200));
        return reply.again_after(poll);
    }
    reply
}

/// Records `request_id` (if any) as naming `op`.
pub(crate) fn remember(shared: &Shared, call: &Call, op: &str) {
    if let Some(id) = call.param("requestId") {
        lock(&shared.inventory)
            .request_ids
            .insert(id.to_owned(), op.to_owned());
    }
}

/// A page of `items` by `maxResults` (capped) and `pageToken`.
pub(crate) fn page(shared: &Shared, call: &Call, kind: &str, items: Vec<Value>) -> Reply {
    page_of(shared, call, kind, items, |v| v)
}

/// [`page`] of `items`, of which only the page asked for is turned into JSON by `json`.
pub(crate) fn page_of<T>(
    shared: &Shared,
    call: &Call,
    kind: &str,
    items: Vec<T>,
    json: impl FnMut(T) -> Value,
) -> Reply {
    let max = call
        .param("maxResults")
        .and_then(|m| m.parse::<usize>().ok())
        .unwrap_or(500)
        .clamp(1, 500)
        .min(shared.cfg.max_results.max(1));
    let offset = match call.param("pageToken") {
        None => 0,
        Some(t) => match t.strip_prefix("pt-").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => {
                return Reply::json(
                    400,
                    error(400, "invalid", "Invalid value for field 'pageToken'."),
                );
            }
        },
    };
    let total = items.len();
    let slice: Vec<Value> = items.into_iter().skip(offset).take(max).map(json).collect();
    let mut body = json!({ "kind": kind, "id": format!("projects/{}", shared.cfg.project_id), "items": slice, "selfLink": format!("{}{}", shared.origin(), call.path) });
    if offset + max < total {
        body["nextPageToken"] = json!(format!("pt-{}", offset + max));
    }
    Reply::json(200, body)
}

pub(crate) fn not_found(resource: &str) -> Reply {
    Reply::json(
        404,
        error(
            404,
            "notFound",
            &format!("The resource '{resource}' was not found"),
        ),
    )
}

/// Whether `name` is an RFC 1035 resource name of at most 63 characters.
pub(crate) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && !name.ends_with('-')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}
