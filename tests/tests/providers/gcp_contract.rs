//! GCP contracts: every request the client sends names a method of the Compute v1 discovery
//! document (HTTP method, path template, query parameters), every body validates against
//! the method's request schema, and the instance body has the fields of google-cloud-compute's
//! recorded insert (`golden-gcp-sdk-requests.jsonl`).
use std::collections::BTreeSet;

use levelrail_clouds::CloudProvider as _;
use serde_json::Value;

use crate::gcp_support::*;

/// The discovery method matching `method` and `path` (relative to `/compute/v1/`).
fn method_for(method: &str, path: &str) -> Option<&'static Value> {
    let given: Vec<&str> = path.split('/').collect();
    let resources = discovery()["resources"].as_object()?;
    resources
        .values()
        .filter_map(|r| r["methods"].as_object())
        .flat_map(|m| m.values())
        .find(|m| {
            let template: Vec<&str> = m["path"].as_str().unwrap_or_default().split('/').collect();
            m["httpMethod"] == method
                && template.len() == given.len()
                && template.iter().zip(&given).all(|(t, g)| {
                    t == g || (t.starts_with('{') && t.ends_with('}') && !g.is_empty())
                })
        })
}

#[tokio::test]
async fn every_compute_request_is_a_discovery_method_with_a_valid_body() {
    // Arrange: a create with SSH (both firewalls), a repair, a list, a delete.
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let mut req = create_request("doc-1", "npv_doc1");
    req.ssh_source_cidr = Some("192.0.2.1/32".into());
    let info = gcp.create_server(&req).await.expect("create");
    fake.edit_firewall("levelrail-deny-ingress", |f| f["priority"] = 1000.into());
    gcp.create_server(&create_request("doc-2", "npv_doc2"))
        .await
        .expect("create");
    gcp.list_servers("cp-test").await.expect("list");
    gcp.list_regions().await.expect("zones");
    gcp.list_sizes(ZONE).await.expect("types");
    gcp.probe().await.expect("probe");
    gcp.delete_provision_resources(Some(&info.id), &req.ownership)
        .await
        .expect("delete");

    // Assert
    let mut checked = BTreeSet::new();
    let billing = levelrail_sim::specs::json("gcp-cloudbilling.v1.discovery.json");
    for r in fake.request_log() {
        if r.path.starts_with("/v1/services/") {
            let problems = billing_problems(&skus_list(), &billing["parameters"], &r.path);
            assert!(problems.is_empty(), "{problems:#?}");
            checked.insert("cloudbilling.services.skus.list".to_owned());
            continue;
        }
        if r.path.starts_with("/v3/") {
            check_resource_manager_request(&r.method, &r.path, &r.body);
            checked.insert("cloudresourcemanager.projects.testIamPermissions".to_owned());
            continue;
        }
        let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
        let rel = path.strip_prefix("/compute/v1/").expect("a Compute path");
        let m = method_for(&r.method, rel)
            .unwrap_or_else(|| panic!("{} {rel} is no discovery method", r.method));
        let id = m["id"].as_str().unwrap_or_default();
        for (k, _) in query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|p| p.split_once('='))
        {
            assert_eq!(
                m["parameters"][k]["location"], "query",
                "{id}: unknown query parameter {k}"
            );
        }
        match m["request"]["$ref"].as_str() {
            Some(schema) => {
                let errors = schema_violations(schema, &r.body);
                assert!(errors.is_empty(), "{id} body: {errors:?}");
            }
            None => assert!(r.body.is_null(), "{id} takes no body"),
        }
        checked.insert(id.to_owned());
    }
    for id in [
        "compute.instances.insert",
        "compute.firewalls.insert",
        "compute.firewalls.update",
        "compute.zoneOperations.wait",
        "compute.instances.aggregatedList",
        "compute.instances.delete",
        "compute.projects.get",
        "cloudresourcemanager.projects.testIamPermissions",
    ] {
        assert!(checked.contains(id), "{id} exercised: {checked:?}");
    }
}

/// A Cloud Resource Manager request: `projects.testIamPermissions` of the v3 discovery
/// document (method, `flatPath`, and a body of the request schema's fields and types).
fn check_resource_manager_request(method: &str, path: &str, body: &Value) {
    let doc = levelrail_sim::specs::json("gcp-cloudresourcemanager.v3.discovery.json");
    let m = &doc["resources"]["projects"]["methods"]["testIamPermissions"];
    assert_eq!(method, m["httpMethod"], "{path}");
    let template = m["flatPath"].as_str().unwrap();
    let (prefix, suffix) = template.split_once("{projectsId}").unwrap();
    let project = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(prefix))
        .and_then(|p| p.strip_suffix(suffix))
        .unwrap_or_else(|| panic!("{path} is not {template}"));
    assert!(!project.is_empty() && !project.contains('/'), "{path}");
    let schema = m["request"]["$ref"].as_str().unwrap();
    let properties = doc["schemas"][schema]["properties"].as_object().unwrap();
    for (field, value) in body.as_object().expect("a JSON object") {
        let spec = properties
            .get(field)
            .unwrap_or_else(|| panic!("{schema}: unknown field {field}"));
        assert_eq!(spec["type"], "array", "{schema}.{field}");
        assert!(
            value.as_array().is_some_and(|items| items
                .iter()
                .all(|i| i.is_string() && !i.as_str().unwrap().contains('*'))),
            "{schema}.{field}: a list of strings without wildcards: {value}"
        );
    }
}

#[test]
fn the_validator_catches_what_the_api_rejects() {
    let bad = serde_json::json!({ "name": "x", "disks": [{ "initializeParams": { "diskSizeGb": 20 } }], "status": "RUNNING", "surprise": 1, "networkInterfaces": [{ "accessConfigs": [{ "type": "NAT" }] }] });
    let errors = schema_violations("Instance", &bad);
    for want in [
        "diskSizeGb: expected string",
        "$.status: output-only",
        "$.surprise: unknown field",
        "NAT is not one of the enum values",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{want}: {errors:?}"
        );
    }
}

#[tokio::test]
async fn the_instance_body_has_the_fields_of_the_sdks_recorded_insert() {
    let golden_insert = &golden_requests()[1];
    let sdk: Value =
        serde_json::from_str(golden_insert["b"].as_str().expect("body")).expect("json");
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    gcp.create_server(&create_request("sdk-1", "npv_sdk1"))
        .await
        .expect("create");
    let ours = fake
        .request_log()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.contains("/instances?"))
        .expect("insert");

    let keys = |v: &Value| {
        v.as_object()
            .map(|m| m.keys().cloned().collect::<BTreeSet<_>>())
            .unwrap_or_default()
    };
    assert_eq!(keys(&ours.body), keys(&sdk), "the same top-level fields");
    for pointer in [
        "/disks/0",
        "/disks/0/initializeParams",
        "/networkInterfaces/0",
        "/networkInterfaces/0/accessConfigs/0",
        "/metadata/items/0",
    ] {
        assert_eq!(
            keys(ours.body.pointer(pointer).expect(pointer)),
            keys(sdk.pointer(pointer).expect(pointer)),
            "{pointer}"
        );
    }
    for pointer in [
        "/networkInterfaces/0/network",
        "/networkInterfaces/0/accessConfigs/0",
        "/disks/0/boot",
        "/disks/0/autoDelete",
        "/disks/0/initializeParams/diskSizeGb",
        "/metadata/items/0/key",
    ] {
        assert_eq!(
            ours.body.pointer(pointer),
            sdk.pointer(pointer),
            "{pointer}"
        );
    }
    assert_eq!(
        ours.body["machineType"],
        format!("zones/{ZONE}/machineTypes/e2-small")
    );
    let (path, _) = ours.path.split_once('?').expect("requestId");
    assert_eq!(
        path.replace(&fake.config().project_id, "proj-1"),
        golden_insert["p"].as_str().expect("p")
    );
    assert_eq!(
        ours.content_type,
        golden_insert["h"]["Content-Type"]
            .as_str()
            .expect("content type")
    );
}

fn golden_requests() -> Vec<Value> {
    levelrail_sim::specs::read("golden-gcp-sdk-requests.jsonl")
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect()
}

/// The `cloudbilling.services.skus.list` method of the discovery document.
pub(crate) fn skus_list() -> Value {
    let doc = levelrail_sim::specs::json("gcp-cloudbilling.v1.discovery.json");
    doc["resources"]["services"]["resources"]["skus"]["methods"]["list"].clone()
}

/// The problems of a request `path` (with its query) against `skus.list`.
pub(crate) fn billing_problems(method: &Value, doc_params: &Value, path: &str) -> Vec<String> {
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let mut problems = Vec::new();
    let parent = route
        .strip_prefix("/v1/")
        .and_then(|r| r.strip_suffix("/skus"))
        .unwrap_or_default();
    let pattern = method["parameters"]["parent"]["pattern"]
        .as_str()
        .unwrap_or_default();
    let matches_pattern = pattern == "^services/[^/]+$"
        && parent
            .strip_prefix("services/")
            .is_some_and(|id| !id.is_empty() && !id.contains('/'));
    if !matches_pattern {
        problems.push(format!("{route} does not match {}", method["flatPath"]));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let spec = method["parameters"]
            .get(name)
            .or_else(|| doc_params.get(name));
        match spec {
            None => problems.push(format!("{name} is no parameter of skus.list")),
            Some(p) if p["type"] == "integer" && value.parse::<i32>().is_err() => {
                problems.push(format!("{name}={value} is not an int32"));
            }
            Some(p) if p["location"] != "query" => {
                problems.push(format!("{name} is not a query parameter"))
            }
            Some(_) => {}
        }
    }
    problems
}

#[test]
fn the_discovery_check_catches_what_the_catalog_refuses() {
    let doc = levelrail_sim::specs::json("gcp-cloudbilling.v1.discovery.json");
    let method = skus_list();
    let check = |path: &str| billing_problems(&method, &doc["parameters"], path);
    assert!(check("/v1/services/6F81-5844-456A/skus?currencyCode=USD&pageSize=5000").is_empty());
    assert!(!check("/v1/services/6F81-5844-456A/skus?pageSize=many").is_empty());
    assert!(!check("/v1/services/6F81-5844-456A/skus?region=us-central1").is_empty());
    assert!(!check("/v1/6F81-5844-456A/skus").is_empty());
}
