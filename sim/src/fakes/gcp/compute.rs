//! Routing of the fake Compute Engine v1 API (`/compute/v1/projects/{project}/…`): the
//! project, zones and machine types with `maxResults` / `pageToken` paging, the default
//! network, firewalls, operations (`get` and `wait`, a long poll answering when `DONE`),
//! `requestId` deduplication of inserts and deletes, and the instances.
use std::sync::Arc;

use serde_json::{Value, json};

use super::state::error;
use super::wire::{not_found, operation, page};
use super::{Shared, auth, catalog, iam, instances, listing};
use crate::fakes::edge::{Call, Reply, lock};

pub(crate) fn handle(shared: &Arc<Shared>, call: &Call, capacity: bool) -> Reply {
    if let Err(refused) = auth::compute_access(shared, call) {
        return refused;
    }
    let segs = call.segments();
    let rest: Vec<&str> = match segs.as_slice() {
        ["compute", "v1", "projects", project, rest @ ..] if *project == shared.cfg.project_id => {
            rest.to_vec()
        }
        ["compute", "v1", "projects", project, ..] => {
            return Reply::json(
                404,
                error(
                    404,
                    "notFound",
                    &format!("The resource 'projects/{project}' was not found"),
                ),
            );
        }
        _ => return Reply::json(404, error(404, "notFound", "Not Found")),
    };
    if let Some(refused) = iam::refuse_if_denied(shared, &call.method, &rest) {
        return refused;
    }
    if let Some(id) = call.param("requestId") {
        if uuid::Uuid::parse_str(id).map_or(true, |u| u.is_nil()) {
            return Reply::json(
                400,
                error(
                    400,
                    "invalid",
                    "Invalid value for field 'requestId': must be a valid UUID other than the zero UUID.",
                ),
            );
        }
        let seen = lock(&shared.inventory).request_ids.get(id).cloned();
        if let Some(op) = seen {
            return operation(shared, &op, false);
        }
    }
    let (base, project) = (shared.compute_base(), shared.cfg.project_id.clone());
    match (call.method.as_str(), rest.as_slice()) {
        ("GET", []) => Reply::json(
            200,
            json!({
                "kind": "compute#project", "id": "4815162342", "name": project, "defaultNetworkTier": "PREMIUM",
                "xpnProjectStatus": "UNSPECIFIED_XPN_PROJECT_STATUS", "selfLink": format!("{base}/projects/{project}"),
                "commonInstanceMetadata": { "kind": "compute#metadata", "fingerprint": "fp", "items": [] },
            }),
        ),
        ("GET", ["zones"]) => page(
            shared,
            call,
            "compute#zoneList",
            catalog::zones(&base, &project),
        ),
        ("GET", ["zones", zone]) => match catalog::zones(&base, &project)
            .into_iter()
            .find(|z| z["name"] == *zone)
        {
            Some(z) => Reply::json(200, z),
            None => not_found(&format!("projects/{project}/zones/{zone}")),
        },
        ("GET", ["zones", zone, "machineTypes"]) if catalog::zone_exists(zone) => page(
            shared,
            call,
            "compute#machineTypeList",
            catalog::machine_types(&base, &project, zone),
        ),
        ("GET", ["global", "networks", "default"]) if lock(&shared.inventory).default_network => {
            Reply::json(
                200,
                json!({
                    "kind": "compute#network", "id": "77", "name": "default", "autoCreateSubnetworks": true,
                    "selfLink": format!("{base}/projects/{project}/global/networks/default"), "routingConfig": { "routingMode": "REGIONAL" },
                }),
            )
        }
        ("GET", ["global", "firewalls"]) => {
            let items: Vec<Value> = lock(&shared.inventory)
                .firewalls
                .values()
                .cloned()
                .collect();
            page(shared, call, "compute#firewallList", items)
        }
        ("POST", ["global", "firewalls"]) => super::firewalls::insert(shared, call),
        ("GET", ["global", "firewalls", name]) => {
            match lock(&shared.inventory).firewalls.get(*name) {
                Some(f) => Reply::json(200, f.clone()),
                None => not_found(&format!("projects/{project}/global/firewalls/{name}")),
            }
        }
        ("PUT", ["global", "firewalls", name]) => super::firewalls::update(shared, call, name),
        ("DELETE", ["global", "firewalls", name]) => super::firewalls::delete(shared, call, name),
        ("POST", ["zones", zone, "instances"]) => instances::insert(shared, call, zone, capacity),
        ("GET", ["zones", zone, "instances"]) => listing::list(shared, call, zone),
        ("GET", ["zones", zone, "instances", name]) => listing::get(shared, zone, name),
        ("DELETE", ["zones", zone, "instances", name]) => {
            instances::delete(shared, call, zone, name)
        }
        ("GET", ["aggregated", "instances"]) => listing::aggregated(shared, call),
        ("GET", ["zones", _, "operations", op]) | ("GET", ["global", "operations", op]) => {
            operation(shared, op, false)
        }
        ("POST", ["zones", _, "operations", op, "wait"])
        | ("POST", ["global", "operations", op, "wait"]) => operation(shared, op, true),
        _ => not_found(&format!("projects/{project}/{}", rest.join("/"))),
    }
}
