//! IAM of the fake: Cloud Resource Manager v3 `projects.testIamPermissions`
//! (`POST /v3/projects/{project}:testIamPermissions`, body `{"permissions": [...]}`,
//! answered with the subset held, `{}` when none), and the permission each Compute call
//! the fake serves needs, so a call whose permission was taken away is refused with 403 as
//! Compute does (`Required '<permission>' permission for '<resource>'`).
use std::sync::Arc;

use serde_json::{Value, json};

use super::Shared;
use super::auth;
use super::state::error;
use crate::fakes::edge::{Call, Reply, lock};

/// The longest list `testIamPermissions` checks in one call.
const MAX_PERMISSIONS: usize = 100;

/// `POST /v3/projects/{target}` where `target` is `<project>:testIamPermissions`.
pub(crate) fn test_iam_permissions(shared: &Arc<Shared>, call: &Call, target: &str) -> Reply {
    if let Err(refused) = auth::compute_access(shared, call) {
        return refused;
    }
    let Some(project) = target.strip_suffix(":testIamPermissions") else {
        return Reply::json(404, error(404, "notFound", "Not Found"));
    };
    if project != shared.cfg.project_id {
        // Resource Manager answers 403 for a project the caller cannot see, found or not.
        return Reply::json(
            403,
            error(
                403,
                "forbidden",
                &format!("The caller does not have permission on projects/{project}"),
            ),
        );
    }
    let Some(asked) = call.json.get("permissions").and_then(Value::as_array) else {
        return invalid("Invalid JSON payload: `permissions` must be a list of permission names");
    };
    let mut names = Vec::with_capacity(asked.len());
    for p in asked {
        match p.as_str() {
            Some(name) if valid_permission(name) => names.push(name.to_owned()),
            _ => {
                return invalid(&format!(
                    "Permission {p} is not valid: permissions are service.resource.verb, without wildcards"
                ));
            }
        }
    }
    if names.len() > MAX_PERMISSIONS {
        return invalid(&format!(
            "At most {MAX_PERMISSIONS} permissions can be tested in one request"
        ));
    }
    let denied = lock(&shared.settings).denied_permissions.clone();
    let held: Vec<String> = names.into_iter().filter(|p| !denied.contains(p)).collect();
    if held.is_empty() {
        Reply::json(200, json!({}))
    } else {
        Reply::json(200, json!({ "permissions": held }))
    }
}

/// `service.resource.verb`: letters only in each part, no wildcards.
fn valid_permission(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphabetic()))
}

fn invalid(message: &str) -> Reply {
    Reply::json(400, error(400, "badRequest", message))
}

/// The permission a Compute call (`rest`: the path after `projects/<project>/`) needs, for
/// the calls this fake serves.
pub(crate) fn required(method: &str, rest: &[&str]) -> Option<&'static str> {
    Some(match (method, rest) {
        ("GET", []) => "compute.projects.get",
        ("GET", ["zones"]) => "compute.zones.list",
        ("GET", ["zones", _, "machineTypes"]) => "compute.machineTypes.list",
        ("GET", ["global", "networks", _]) => "compute.networks.get",
        ("GET", ["global", "firewalls", _]) => "compute.firewalls.get",
        ("POST", ["global", "firewalls"]) => "compute.firewalls.create",
        ("PUT" | "PATCH", ["global", "firewalls", _]) => "compute.firewalls.update",
        ("DELETE", ["global", "firewalls", _]) => "compute.firewalls.delete",
        ("POST", ["zones", _, "instances"]) => "compute.instances.create",
        ("GET", ["zones", _, "instances", _]) => "compute.instances.get",
        ("GET", ["aggregated", "instances"]) => "compute.instances.list",
        ("DELETE", ["zones", _, "instances", _]) => "compute.instances.delete",
        ("GET" | "POST", ["zones", _, "operations", ..]) => "compute.zoneOperations.get",
        ("GET" | "POST", ["global", "operations", ..]) => "compute.globalOperations.get",
        _ => return None,
    })
}

/// A 403 for a call needing `permission`, when the service account lacks it.
pub(crate) fn refuse_if_denied(shared: &Shared, method: &str, rest: &[&str]) -> Option<Reply> {
    let permission = required(method, rest)?;
    if !lock(&shared.settings)
        .denied_permissions
        .contains(permission)
    {
        return None;
    }
    let resource = format!("projects/{}/{}", shared.cfg.project_id, rest.join("/"));
    Some(Reply::json(
        403,
        error(
            403,
            "forbidden",
            &format!("Required '{permission}' permission for '{resource}'"),
        ),
    ))
}
