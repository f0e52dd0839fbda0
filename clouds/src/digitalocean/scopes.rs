//! The token scopes the client's calls need, and the probe that proves each one without
//! creating anything. Reads are proven by listing one item; creates and updates by a `POST`
//! whose body is empty on purpose, and deletes by a `DELETE` of an id that cannot exist:
//! DigitalOcean checks the token's scope first, so such a call answers 403 without the scope
//! and 400, 404 or 422 with it. A missing scope is named, not summed up as "read-only".
use reqwest::Method;
use serde_json::{Value, json};

use super::client::Api;
use crate::ProviderError;

/// Every scope the client's calls need (each operation's `security` entry in DigitalOcean's
/// OpenAPI description; `tests/tests/providers/digitalocean_scopes.rs` derives this list from
/// the calls the client makes, and holds the README's list to it).
pub const REQUIRED_SCOPES: [&str; 15] = [
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
];

/// A firewall no firewall is (DigitalOcean's ids are random UUIDs), and its tags.
const NO_FIREWALL: &str = "/firewalls/00000000-0000-0000-0000-000000000000";
const NO_FIREWALL_TAGS: &str = "/firewalls/00000000-0000-0000-0000-000000000000/tags";
/// An invalid tag name (spaces): no tag can have it, and creating it is refused with 400.
const PROBE_TAG: &str = "levelrail write probe";
/// The tag of that name.
const NO_TAG: &str = "/tags/levelrail%20write%20probe";
/// Droplet ids are sequential from 1 (the spec's minimum) and far below 2^53 - 1, the
/// largest id JSON carries exactly; SSH key ids are sequential from 1 too.
const NO_DROPLET: &str = "/droplets/9007199254740991";
const NO_SSH_KEY: &str = "/account/keys/0";

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
fn checks() -> [Check; 14] {
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
    ]
}

/// The scopes of `REQUIRED_SCOPES` the token lacks, in that order. `account_read` says
/// whether `GET /v2/account` was allowed. A check whose other scopes are missing is skipped
/// (its 403 would not say which scope is lacking); those show up once the others are granted.
pub(super) async fn missing_scopes(
    api: &Api,
    account_read: bool,
) -> Result<Vec<&'static str>, ProviderError> {
    let mut missing = Vec::new();
    if !account_read {
        missing.push("account:read");
    }
    for c in checks() {
        if c.also_needs.iter().any(|s| missing.contains(s)) {
            continue;
        }
        let body = c.body.map(|b| b());
        if !api.scope_granted(c.method, c.path, body.as_ref()).await? {
            missing.push(c.scope);
        }
    }
    Ok(missing)
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
                || [NO_DROPLET, NO_FIREWALL, NO_SSH_KEY, NO_TAG].contains(&c.path);
            assert!(targets_nothing, "{} {}", c.method, c.path);
        }
    }
}
