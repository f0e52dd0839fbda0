//! What the fake's HTTP edge (`api.rs`), its router (`routes.rs`) and the handlers share:
//! the fake's state, one parsed request, the answer with Hetzner's error envelope, and the
//! answers and query parameters common to the resources (paging, label selectors, ids).
//! A leaf: it imports neither the edge nor the router nor a handler.
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::LoggedRequest;
use super::bucket::Bucket;
use super::labels::Selector;
use super::state::Inventory;
use crate::fakes::{BootHook, FaultPlan};

/// State shared by the handlers, the timers and the handle.
pub(crate) struct Shared {
    pub(crate) token: String,
    pub(crate) read_only: bool,
    pub(crate) boot_hook: Option<BootHook>,
    pub(crate) state_step: Duration,
    pub(crate) max_per_page: u64,
    pub(crate) full_regions: Vec<String>,
    pub(crate) faults: FaultPlan,
    pub(crate) inventory: Mutex<Inventory>,
    pub(crate) log: Mutex<Vec<LoggedRequest>>,
    pub(crate) bucket: Mutex<Option<Bucket>>,
    pub(crate) tasks: Mutex<Vec<AbortHandle>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("read_only", &self.read_only)
            .field("state_step", &self.state_step)
            .finish_non_exhaustive()
    }
}

/// A parsed request, relative to `/v1` (no `Debug`: it holds the bearer token).
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) method: String,
    /// The `Authorization` header, as sent (never logged).
    pub(crate) authorization: Option<String>,
    pub(crate) segments: Vec<String>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Call {
    /// The first value of query parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, JSON body (`Null` for none), optional `Retry-After`.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) retry_after: Option<u64>,
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            retry_after: None,
        }
    }

    pub(crate) fn no_content() -> Self {
        Self::json(204, Value::Null)
    }

    /// Hetzner's answer when it cannot place a server (no capacity for the type there).
    pub(crate) fn resource_unavailable() -> Self {
        Self::error(
            412,
            "resource_unavailable",
            "the requested resource is currently unavailable",
        )
    }

    /// Hetzner's error envelope.
    pub(crate) fn error(status: u16, code: &str, message: &str) -> Self {
        Self::json(
            status,
            json!({ "error": { "code": code, "message": message, "details": {} } }),
        )
    }
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
    page_of(shared, call, key, items, |v| v)
}

/// [`page`] of `items`, of which only the page asked for is turned into JSON by `json`: a
/// poll that walks every page of a large list costs one JSON encoding per item, not one per
/// item and page.
pub(crate) fn page_of<T>(
    shared: &Shared,
    call: &Call,
    key: &str,
    items: Vec<T>,
    json: impl FnMut(T) -> Value,
) -> Reply {
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
        .map(json)
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
