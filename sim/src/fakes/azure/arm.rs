//! Routing of the fake ARM API: bearer tokens issued by the fake Azure AD (401
//! `InvalidAuthenticationToken` / `ExpiredAuthenticationToken`), `api-version` checks per
//! resource provider, subscription-scope reads (refused with 403 `AuthorizationFailed`
//! unless the principal's role there allows it), Resource SKUs, resource groups, the
//! tag-filtered resource list with `nextLink` paging, effective permissions, operation
//! status, and the resources.
use std::time::SystemTime;

use serde_json::{Value, json};

use super::state::{Resource, error};
use super::wire::{Target, page_of, target};
use super::{Shared, catalog, compute, deletes, network, roles, skus};
use crate::fakes::edge::{Call, Reply, lock};

/// The api-versions the fake serves per namespace (unknown ones are refused, as by ARM).
fn api_versions(ns: &str) -> &'static [&'static str] {
    match ns.to_ascii_lowercase().as_str() {
        "microsoft.compute" => &["2021-07-01", "2024-07-01", "2024-11-01", "2026-04-01"],
        "microsoft.network" => &["2023-09-01", "2024-05-01"],
        "microsoft.authorization" => &["2022-04-01"],
        "subscriptions" => &["2022-12-01", "2021-04-01"],
        _ => &["2021-04-01"],
    }
}

pub(crate) fn handle(shared: &std::sync::Arc<Shared>, call: &Call, capacity: bool) -> Reply {
    if let Some(refused) = authenticate(shared, call) {
        return refused;
    }
    let segs = call.segments();
    let is = |i: usize, w: &str| segs.get(i).is_some_and(|s| s.eq_ignore_ascii_case(w));
    if !is(0, "subscriptions") || segs.len() < 3 {
        return Reply::json(
            404,
            error(
                "InvalidResourceType",
                "the resource type could not be found",
            ),
        );
    }
    if !segs[1].eq_ignore_ascii_case(&shared.cfg.subscription_id) {
        return Reply::json(
            404,
            error(
                "SubscriptionNotFound",
                &format!("The subscription '{}' could not be found.", segs[1]),
            ),
        );
    }
    let ns = if is(2, "providers") {
        segs.get(3).copied().unwrap_or_default()
    } else if is(2, "resourcegroups") {
        segs.get(5).copied().unwrap_or("Microsoft.Resources")
    } else {
        "subscriptions"
    };
    match call.param("api-version") {
        None => {
            return Reply::json(
                400,
                error(
                    "MissingApiVersionParameter",
                    "The api-version query parameter (?api-version=) is required for all requests.",
                ),
            );
        }
        Some(v) if !api_versions(ns).contains(&v) => {
            return Reply::json(
                400,
                error(
                    "InvalidApiVersionParameter",
                    &format!("The api-version '{v}' is invalid for {ns}."),
                ),
            );
        }
        Some(_) => {}
    }
    match (call.method.as_str(), segs.len()) {
        ("GET", 3) if is(2, "locations") => {
            return roles::subscription_check(
                shared,
                "Microsoft.Resources/subscriptions/locations/read",
            )
            .unwrap_or_else(|| Reply::json(200, catalog::locations(&shared.cfg.subscription_id)));
        }
        ("GET", 7) if is(2, "providers") && is(4, "locations") && is(6, "vmSizes") => {
            return roles::subscription_check(shared, "Microsoft.Compute/locations/vmSizes/read")
                .unwrap_or_else(|| Reply::json(200, catalog::sizes(segs[5])));
        }
        ("GET", 5) if is(2, "providers") && is(3, "Microsoft.Compute") && is(4, "skus") => {
            return skus::list(shared, call);
        }
        ("GET", 8) if is(2, "providers") && is(4, "locations") && is(6, "operations") => {
            return deletes::operation_status(shared, segs[7]);
        }
        ("GET", 8) if is(2, "providers") && is(4, "locations") && is(6, "operationResults") => {
            return deletes::operation_result(shared, segs[7]);
        }
        _ => {}
    }
    if !is(2, "resourcegroups") || segs.len() < 4 {
        return Reply::json(
            404,
            error(
                "InvalidResourceType",
                "the resource type could not be found",
            ),
        );
    }
    let group = lock(&shared.inventory)
        .groups
        .get(&segs[3].to_ascii_lowercase())
        .cloned();
    let Some(group) = group else {
        return Reply::json(
            404,
            error(
                "ResourceGroupNotFound",
                &format!("Resource group '{}' could not be found.", segs[3]),
            ),
        );
    };
    let scope = format!(
        "/subscriptions/{}/resourceGroups/{group}",
        shared.cfg.subscription_id
    );
    match (call.method.as_str(), segs.len()) {
        ("GET", 4) => {
            return Reply::json(
                200,
                json!({ "id": scope, "name": group, "type": "Microsoft.Resources/resourceGroups", "location": "westeurope", "properties": { "provisioningState": "Succeeded" } }),
            );
        }
        ("GET", 5) if is(4, "resources") => return list_resources(shared, call, &scope),
        ("GET", 7)
            if is(4, "providers") && is(5, "Microsoft.Authorization") && is(6, "permissions") =>
        {
            let (contributor, custom) = {
                let s = lock(&shared.settings);
                (s.contributor, s.custom_role.clone())
            };
            let p = if let Some((actions, not_actions)) = custom {
                json!({ "actions": actions, "notActions": not_actions, "dataActions": [], "notDataActions": [] })
            } else if contributor {
                json!({ "actions": ["*"], "notActions": ["Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write", "Microsoft.Authorization/elevateAccess/Action"], "dataActions": [], "notDataActions": [] })
            } else {
                json!({ "actions": ["*/read"], "notActions": [], "dataActions": [], "notDataActions": [] })
            };
            return Reply::json(200, json!({ "value": [p] }));
        }
        _ => {}
    }
    let target = match target(&segs, &scope, &group) {
        Some(t) => t,
        None => {
            return Reply::json(
                404,
                error(
                    "InvalidResourceType",
                    "the resource type could not be found",
                ),
            );
        }
    };
    let verb = match call.method.as_str() {
        "GET" => "read",
        "DELETE" => "delete",
        _ => "write",
    };
    let action = format!("{}/{verb}", target.kind);
    if !roles::group_allows(shared, &action) {
        return roles::forbidden(&action, &target.id);
    }
    match (call.method.as_str(), target.kind) {
        ("GET", _) => get(shared, call, &target),
        ("PUT", "Microsoft.Compute/virtualMachines") => {
            compute::put_vm(shared, call, &target, capacity)
        }
        ("DELETE", "Microsoft.Compute/virtualMachines") => deletes::delete_vm(shared, &target),
        ("PUT", "Microsoft.Compute/disks") => Reply::json(
            400,
            error(
                "InvalidRequestContent",
                "the fake creates disks only with their VM",
            ),
        ),
        ("PUT", _) => network::put(shared, call, &target),
        ("DELETE", _) => deletes::delete_network(shared, &target),
        _ => Reply::json(405, error("MethodNotAllowed", "the method is not allowed")),
    }
}

fn authenticate(shared: &Shared, call: &Call) -> Option<Reply> {
    let token = call
        .authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "));
    let expiry = token.and_then(|t| lock(&shared.inventory).tokens.get(t).copied());
    match expiry {
        None => Some(Reply::json(401, error("InvalidAuthenticationToken", "The access token is invalid.")).header("www-authenticate", "Bearer authorization_uri=\"https://login.microsoftonline.com/\", error=\"invalid_token\"")),
        Some(exp) if exp < SystemTime::now() => Some(Reply::json(401, error("ExpiredAuthenticationToken", "The access token expiry UTC time is earlier than current UTC time."))),
        Some(_) => None,
    }
}

fn get(shared: &Shared, call: &Call, t: &Target) -> Reply {
    let inv = lock(&shared.inventory);
    let Some(r) = inv.get(&t.id) else {
        return Reply::json(
            404,
            error(
                "ResourceNotFound",
                &format!(
                    "The Resource '{}/{}' under resource group '{}' was not found.",
                    t.kind, t.name, t.group
                ),
            ),
        );
    };
    let mut body = r.render();
    if t.kind == "Microsoft.Network/virtualNetworks" {
        body["properties"]["subnets"] = Value::Array(network::subnets_of(&inv, &r.id));
    }
    if t.kind == "Microsoft.Compute/virtualMachines"
        && call.param("$expand") == Some("instanceView")
    {
        body["properties"]["instanceView"] = compute::instance_view(&inv, r);
    }
    Reply::json(200, body)
}

/// `GET …/resources?$filter=tagName eq 'k' and tagValue eq 'v'`, paged by `$skiptoken`.
fn list_resources(shared: &Shared, call: &Call, scope: &str) -> Reply {
    let filter = match call.param("$filter").map(parse_tag_filter) {
        None => None,
        Some(Some(f)) => Some(f),
        Some(None) => {
            return Reply::json(
                400,
                error(
                    "InvalidFilterInQueryString",
                    "Invalid $filter parameter in the query string.",
                ),
            );
        }
    };
    let inv = lock(&shared.inventory);
    let prefix = format!("{}/", scope.to_ascii_lowercase());
    let all: Vec<&Resource> = inv
        .resources
        .values()
        .filter(|r| r.id.to_ascii_lowercase().starts_with(&prefix) && !r.kind.ends_with("/subnets"))
        .filter(|r| {
            filter
                .as_ref()
                .is_none_or(|(k, v)| r.tags.get(k) == Some(v))
        })
        .collect();
    let (page, next) = page_of(
        shared,
        call,
        all,
        |r| json!({ "id": r.id, "name": r.name, "type": r.kind, "location": r.location, "tags": r.tags }),
    );
    let mut body = json!({ "value": page });
    if let Some(next) = next {
        body["nextLink"] = json!(next);
    }
    Reply::json(200, body)
}

/// `tagName eq 'k' and tagValue eq 'v'` (quotes doubled inside values).
fn parse_tag_filter(f: &str) -> Option<(String, String)> {
    let rest = f.trim().strip_prefix("tagName eq '")?;
    let (key, rest) = quoted(rest)?;
    let rest = rest.trim_start().strip_prefix("and tagValue eq '")?;
    let (value, rest) = quoted(rest)?;
    rest.trim().is_empty().then_some((key, value))
}

/// Reads up to the closing quote (`''` is a quote); returns the value and what follows.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, n)| *n) == Some('\'') {
                out.push('\'');
                chars.next();
            } else {
                return Some((out, &s[i + 1..]));
            }
        } else {
            out.push(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_filters_parse_with_escaped_quotes() {
        assert_eq!(
            parse_tag_filter("tagName eq 'k' and tagValue eq 'it''s'"),
            Some(("k".into(), "it's".into()))
        );
        assert_eq!(parse_tag_filter("name eq 'x'"), None);
    }
}
