//! Token scopes, as DigitalOcean checks them: a full-access token may call anything, a
//! read-only token every `GET` (it holds every `<resource>:read` scope), and a custom-scoped
//! token only the operations whose scopes it holds. The scope is checked before the body
//! or the addressed resource, so a `POST` with an empty body answers 403 without the scope
//! and 400/422 with it, and a `DELETE` of an id that cannot exist 403 or 404. The scopes of
//! each route come from the operation's `security` entry in DigitalOcean's OpenAPI
//! description (`tests/tests/providers/digitalocean_scopes.rs` holds this table to it),
//! plus those the operation's description adds (untagging a droplet needs
//! `droplet:update`; the fake's untag takes droplets only).
use std::collections::BTreeSet;

/// (method, path template, scopes the operation needs) of every route the fake serves.
pub const ROUTE_SCOPES: [(&str, &str, &[&str]); 21] = [
    ("GET", "/v2/account", &["account:read"]),
    ("GET", "/v2/account/keys", &["ssh_key:read"]),
    ("POST", "/v2/account/keys", &["ssh_key:create"]),
    (
        "GET",
        "/v2/account/keys/{ssh_key_identifier}",
        &["ssh_key:read"],
    ),
    (
        "DELETE",
        "/v2/account/keys/{ssh_key_identifier}",
        &["ssh_key:delete"],
    ),
    ("GET", "/v2/regions", &["regions:read"]),
    ("GET", "/v2/sizes", &["sizes:read", "regions:read"]),
    ("GET", "/v2/droplets", &["droplet:read"]),
    ("POST", "/v2/droplets", &["droplet:create"]),
    ("GET", "/v2/droplets/{droplet_id}", &["droplet:read"]),
    ("DELETE", "/v2/droplets/{droplet_id}", &["droplet:delete"]),
    ("GET", "/v2/firewalls", &["firewall:read"]),
    ("POST", "/v2/firewalls", &["firewall:create"]),
    ("GET", "/v2/firewalls/{firewall_id}", &["firewall:read"]),
    (
        "DELETE",
        "/v2/firewalls/{firewall_id}",
        &["firewall:delete"],
    ),
    (
        "POST",
        "/v2/firewalls/{firewall_id}/droplets",
        &["firewall:update"],
    ),
    (
        "POST",
        "/v2/firewalls/{firewall_id}/tags",
        &["firewall:update"],
    ),
    ("POST", "/v2/tags", &["tag:create"]),
    ("GET", "/v2/tags/{tag_id}", &["tag:read"]),
    ("DELETE", "/v2/tags/{tag_id}", &["tag:delete"]),
    ("DELETE", "/v2/tags/{tag_id}/resources", &["tag:delete"]),
];

/// Scopes a route needs besides its `security` entry, as the operation's description says
/// ("to untag a Droplet, you must have `tag:delete` and `droplet:update`").
pub const DESCRIBED_SCOPES: [(&str, &str, &[&str]); 1] =
    [("DELETE", "/v2/tags/{tag_id}/resources", &["droplet:update"])];

/// What a token may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Access {
    /// Every scope.
    Full,
    /// Every `<resource>:read` scope.
    ReadOnly,
    /// These scopes only.
    Scoped(BTreeSet<String>),
}

impl Access {
    /// Whether the token holds every scope of `needed`.
    pub(super) fn allows(&self, needed: &[&str]) -> bool {
        match self {
            Access::Full => true,
            Access::ReadOnly => needed.iter().all(|s| s.ends_with(":read")),
            Access::Scoped(held) => needed.iter().all(|s| held.contains(*s)),
        }
    }
}

/// The scopes `method` on the concrete `path` needs (none for a path the fake does not
/// serve: its 404 needs no scope).
pub(super) fn required(method: &str, path: &str) -> Vec<&'static str> {
    let given: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTE_SCOPES
        .iter()
        .chain(&DESCRIBED_SCOPES)
        .filter(|(m, template, _)| m.eq_ignore_ascii_case(method) && matches(template, &given))
        .flat_map(|(_, _, scopes)| scopes.iter().copied())
        .collect()
}

fn matches(template: &str, given: &[&str]) -> bool {
    let t: Vec<&str> = template.split('/').collect();
    t.len() == given.len()
        && t.iter()
            .zip(given)
            .all(|(ts, gs)| (ts.starts_with('{') && !gs.is_empty()) || ts == gs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_resolve_to_their_scopes_and_tokens_hold_them_or_not() {
        assert_eq!(required("POST", "/v2/droplets"), ["droplet:create"]);
        assert_eq!(required("DELETE", "/v2/droplets/0"), ["droplet:delete"]);
        assert_eq!(
            required("POST", "/v2/firewalls/abc/tags"),
            ["firewall:update"]
        );
        assert_eq!(
            required("DELETE", "/v2/tags/web/resources"),
            ["tag:delete", "droplet:update"]
        );
        assert!(required("GET", "/v2/nothing").is_empty());
        let scoped = Access::Scoped(["droplet:read".to_owned()].into());
        assert!(scoped.allows(&["droplet:read"]) && !scoped.allows(&["droplet:create"]));
        assert!(Access::ReadOnly.allows(&["sizes:read", "regions:read"]));
        assert!(!Access::ReadOnly.allows(&["tag:create"]) && Access::Full.allows(&["tag:create"]));
    }
}
