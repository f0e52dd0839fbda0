//! The token scopes the client's calls need, and the probe that proves each one without
//! creating anything. Reads are proven by listing one item; creates and updates by a `POST`
//! whose body is empty on purpose, deletes by a `DELETE` of an id that cannot exist, and
//! untagging by a `DELETE` of a droplet from a tag that cannot exist:
//! DigitalOcean checks the token's scope first, so such a call answers 403 without the scope
//! and 400, 404 or 422 with it. A missing scope is named, not summed up as "read-only".
use reqwest::Method;
use serde_json::{Value, json};

use super::client::Api;
use crate::ProviderError;

/// Every scope the client's calls need (each operation's `security` entry in DigitalOcean's
/// OpenAPI description, and `droplet:update`, which its description adds for untagging a
/// droplet; `tests/tests/providers/digitalocean_scopes.rs` derives this list from the calls
/// the client makes, and holds the README's list to it).
pub const REQUIRED_SCOPES: [&str; 16] = [
    "account:read",
    "regions:read",
    "sizes:read",
    "droplet:read",
    "droplet:create",
    "droplet:delete",
    "firewall:read",
    "firewall:create",
    "firewall:update",
    "firewall:delete",
    "ssh_key:read",
    "ssh_key:create",
    "ssh_key:delete",
    "tag:create",
    "tag:delete",
    "droplet:update",
];

/// A firewall no firewall is (DigitalOcean's ids are random UUIDs), and its tags.
const NO_FIREWALL: &str = "/firewalls/00000000-0000-0000-0000-000000000000";
const NO_FIREWALL_TAGS: &str = "/firewalls/00000000-0000-0000-0000-000000000000/tags";
/// An invalid tag name (spaces): no tag can have it, and creating it is refused with 400.
const PROBE_TAG: &str = "levelrail write probe";
/// The tag of that name.
const NO_TAG: &str = "/tags/levelrail%20write%20probe";
/// Untagging resources of that tag.
const NO_TAG_RESOURCES: &str = "/tags/levelrail%20write%20probe/resources";
/// Droplet ids are sequential from 1 (the spec's minimum) and far below 2^53 - 1, the
/// largest id JSON carries exactly; SSH key ids are sequential from 1 too.
const NO_DROPLET: &str = "/droplets/9007199254740991";
const NO_SSH_KEY: &str = "/account/keys/0";
/// The id of `NO_DROPLET`.
const NO_DROPLET_ID: &str = "9007199254740991";

/// One probing call: the scope it proves, the scopes it also needs (proven earlier), and
/// the request.
struct Check {
    scope: &'static str,
    also_needs: &'static [&'static str],
    method: Method,
    path: &'static str,
    body: Option<fn() -> Value>,
}

fn check(scope: &'static str, method: Method, path: &'static str) -> Check {
    Check {
        scope,
        also_needs: &[],
        method,
        path,
        body: None,
    }
}

fn empty() -> Value {
    json!({})
}

/// The checks, one per scope of `REQUIRED_SCOPES` but `account:read` (the probe's first
/// call, `GET /v2/account`, proves it).
fn checks() -> [Check; 15] {
    let post = |scope, path, body: fn() -> Value| Check {
        body: Some(body),
        ..check(scope, Method::POST, path)
    };
    [
        check("regions:read", Method::GET, "/regions?per_page=1"),
        Check {
            also_needs: &["regions:read"],
            ..check("sizes:read", Method::GET, "/sizes?per_page=1")
        },
        check("droplet:read", Method::GET, "/droplets?per_page=1"),
        post("droplet:create", "/droplets", empty),
        check("droplet:delete", Method::DELETE, NO_DROPLET),
        check("firewall:read", Method::GET, "/firewalls?per_page=1"),
        post("firewall:create", "/firewalls", empty),
        post(
            "firewall:update",
            NO_FIREWALL_TAGS,
            || json!({ "tags": [] }),
        ),
        check("firewall:delete", Method::DELETE, NO_FIREWALL),
        check("ssh_key:read", Method::GET, "/account/keys?per_page=1"),
        post("ssh_key:create", "/account/keys", empty),
        check("ssh_key:delete", Method::DELETE, NO_SSH_KEY),
        post("tag:create", "/tags", || json!({ "name": PROBE_TAG })),
        check("tag:delete", Method::DELETE, NO_TAG),
        // Untagging a droplet needs `droplet:update` besides `tag:delete`.
        Check {
            also_needs: &["tag:delete"],
            body: Some(
                || json!({ "resources": [{ "resource_id": NO_DROPLET_ID, "resource_type": "droplet" }] }),
            ),
            ..check("droplet:update", Method::DELETE, NO_TAG_RESOURCES)
        },
    ]
}

/// What the probe found of `REQUIRED_SCOPES`, each list in that order.
#[derive(Debug, Default)]
pub(super) struct Scopes {
    /// The scopes the token lacks.
    pub(super) missing: Vec<&'static str>,
    /// The scopes not checked because a check needs one of `missing` too (its 403 would not
    /// say which scope is lacking); they are checked once the others are granted.
    pub(super) unchecked: Vec<&'static str>,
}

/// Which of `REQUIRED_SCOPES` the token lacks. `account_read` says whether
/// `GET /v2/account` was allowed.
pub(super) async fn check_scopes(api: &Api, account_read: bool) -> Result<Scopes, ProviderError> {
    let mut found = Scopes::default();
    if !account_read {
        found.missing.push("account:read");
    }
    for c in checks() {
        if c.also_needs.iter().any(|s| found.missing.contains(s)) {
            found.unchecked.push(c.scope);
            continue;
        }
        let body = c.body.map(|b| b());
        if !api.scope_granted(c.method, c.path, body.as_ref()).await? {
            found.missing.push(c.scope);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_required_scope_has_one_check() {
        let mut proven: Vec<&str> = checks().iter().map(|c| c.scope).collect();
        proven.insert(0, "account:read");
        assert_eq!(proven, REQUIRED_SCOPES);
        for c in checks() {
            let targets_nothing = c.method == Method::GET
                || (c.method == Method::POST && c.body.is_some())
                || [
                    NO_DROPLET,
                    NO_FIREWALL,
                    NO_SSH_KEY,
                    NO_TAG,
                    NO_TAG_RESOURCES,
                ]
                .contains(&c.path);
            assert!(targets_nothing, "{} {}", c.method, c.path);
        }
    }
}
