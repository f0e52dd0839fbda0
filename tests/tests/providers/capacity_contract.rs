//! Full regions on every fake cloud, through the real clients: a create in a region the fake
//! is told is full fails with `CapacityUnavailable` and the provider's own code, the answer
//! has the provider's documented error shape (validated against the OpenAPI descriptions of
//! Hetzner and DigitalOcean, and the Compute discovery document's `Operation`; EC2's and
//! ARM's error envelopes, which their specs here do not describe, are checked by shape),
//! and once the saga's `delete_provision_resources(None, …)` has run nothing of the attempt
//! is left at the fake.
use levelrail_clouds::{CloudProvider, CreateServer, ErrorKind};
use levelrail_sim::openapi;
use serde_json::Value;

use crate::{aws_support, azure_support, digitalocean_support, gcp_support, hetzner_support};

/// Creates `req` (in a full region): it must fail for capacity with `code`; then the
/// saga's cleanup between choices runs.
async fn refused_then_cleaned(cloud: &dyn CloudProvider, req: &CreateServer, code: &str) {
    let e = cloud
        .create_server(req)
        .await
        .expect_err("a create in a full region fails");
    assert_eq!(
        (e.kind, e.code.as_str()),
        (ErrorKind::CapacityUnavailable, code),
        "{e}"
    );
    cloud
        .delete_provision_resources(None, &req.ownership)
        .await
        .expect("cleanup");
}

#[tokio::test]
async fn hetzner_answers_412_resource_unavailable_in_a_full_location_and_nothing_is_left() {
    let fake = hetzner_support::start_fake(|c| c.full_regions = vec!["fsn1".into()]).await;
    let hetzner = hetzner_support::client(&fake, hetzner_support::TOKEN);
    let req = hetzner_support::create_request("full-1", "npv_full1");

    refused_then_cleaned(&hetzner, &req, "resource_unavailable").await;

    let log = fake.request_log();
    let refused = log
        .iter()
        .find(|r| r.method == "POST" && r.path == "/servers")
        .expect("the create was sent");
    assert_eq!(refused.status, Some(412));
    assert_eq!(refused.response["error"]["code"], "resource_unavailable");
    let violations = hetzner_support::contract_violations(&log);
    assert!(violations.is_empty(), "{violations:#?}");
    let ours = |labels: &std::collections::BTreeMap<String, String>| {
        labels.values().any(|v| v == "npv_full1")
    };
    assert!(fake.servers().is_empty());
    assert!(!fake.firewalls().iter().any(|f| ours(&f.labels)));
    assert!(!fake.ssh_keys().iter().any(|k| ours(&k.labels)));
}

#[tokio::test]
async fn digitalocean_answers_422_region_unavailable_and_nothing_is_left() {
    let fake = digitalocean_support::start_fake(|c| c.full_regions = vec!["nyc3".into()]).await;
    let digitalocean = digitalocean_support::client(&fake, digitalocean_support::TOKEN);
    let req = digitalocean_support::create_request("npv_full2");

    refused_then_cleaned(&digitalocean, &req, "unprocessable_entity").await;

    let log = fake.request_log();
    let refused = log
        .iter()
        .find(|r| r.method == "POST" && r.path == "/v2/droplets")
        .expect("the create was sent");
    assert_eq!(refused.status, Some(422));
    let message = refused.response["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("currently unavailable for new Droplets"),
        "{message}"
    );
    openapi::digitalocean()
        .validate_response("POST", "/v2/droplets", 422, &refused.response)
        .unwrap_or_else(|e| panic!("the 422 breaks the spec: {e:#?}"));
    let tag = digitalocean_support::provision_tag("npv_full2");
    assert!(fake.droplets().is_empty());
    assert!(!fake.firewalls().iter().any(|f| f.tags.contains(&tag)));
}

#[tokio::test]
async fn aws_refuses_every_zone_of_a_full_region_and_nothing_is_left() {
    let fake = aws_support::start_fake(|c| c.full_regions = vec![aws_support::REGION.into()]).await;
    let ec2 = aws_support::client(&fake);
    let req = aws_support::create_request("cp-test", "full-3", "npv_full3");

    refused_then_cleaned(&ec2, &req, "InsufficientInstanceCapacity").await;

    let launches: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.action == "RunInstances")
        .collect();
    let tried: std::collections::BTreeSet<&str> = launches
        .iter()
        .filter_map(|r| r.params.get("NetworkInterface.1.SubnetId"))
        .map(String::as_str)
        .collect();
    let subnets = fake.default_subnets(aws_support::REGION);
    let every: std::collections::BTreeSet<&str> = subnets.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(tried, every, "every default subnet was tried");
    for r in &launches {
        assert_eq!(
            (r.status, r.error_code.as_deref()),
            (Some(500), Some("InsufficientInstanceCapacity"))
        );
        // EC2's error envelope: Response / Errors / Error (Code, Message), RequestID.
        for part in [
            "<Response><Errors><Error><Code>",
            "<Message>",
            "<RequestID>",
        ] {
            assert!(r.response.contains(part), "{part} in {}", r.response);
        }
    }
    let ours =
        |tags: &std::collections::BTreeMap<String, String>| tags.values().any(|v| v == "npv_full3");
    assert!(fake.instances().is_empty());
    assert!(!fake.groups().iter().any(|g| ours(&g.tags)));
    assert!(!fake.key_pairs().iter().any(|k| ours(&k.3)));
}

#[tokio::test]
async fn azure_fails_the_vm_operation_with_allocation_failed_and_the_cleanup_removes_the_vm() {
    let req = azure_support::create_request("full-4", "npv_full4");
    let fake = azure_support::start_fake(|c| c.full_regions = vec![req.region.clone()]).await;
    let azure = azure_support::client(&fake);

    // As in Azure, the VM stays behind in `Failed` until deleted: the cleanup deletes it.
    refused_then_cleaned(&azure, &req, "AllocationFailed").await;
    let deleted_vm = fake.request_log().iter().any(|r| {
        r.method == "DELETE"
            && r.path
                .to_ascii_lowercase()
                .contains("/virtualmachines/full-4")
    });
    assert!(deleted_vm, "the failed VM was deleted");
    assert!(fake.vms().is_empty());

    let operation = fake
        .request_log()
        .into_iter()
        .find(|r| r.method == "GET" && r.response["status"] == "Failed")
        .expect("the operation was polled");
    // ARM's asynchronous operation result: status, and error { code, message }.
    assert_eq!(operation.response["error"]["code"], "AllocationFailed");
    assert!(operation.response["error"]["message"].is_string());
    let left: Vec<_> = fake
        .resources()
        .into_iter()
        .filter(|(_, _, tags)| tags.values().any(|v| v == "npv_full4"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn gcp_ends_the_insert_with_zone_resource_pool_exhausted_and_nothing_is_left() {
    let fake = gcp_support::start_fake(|c| c.full_regions = vec![gcp_support::ZONE.into()]).await;
    let gcp = gcp_support::client(&fake);
    let req = gcp_support::create_request("full-5", "npv_full5");

    refused_then_cleaned(&gcp, &req, "ZONE_RESOURCE_POOL_EXHAUSTED").await;

    let operation = fake
        .request_log()
        .into_iter()
        .map(|r| r.response)
        .find(|b| b["kind"] == "compute#operation" && !b["error"].is_null())
        .expect("the failed operation was read");
    assert_eq!(operation["status"], "DONE");
    assert_eq!(
        operation["error"]["errors"][0]["code"],
        "ZONE_RESOURCE_POOL_EXHAUSTED"
    );
    let unknown = unknown_operation_fields(&operation);
    assert!(
        unknown.is_empty(),
        "fields the discovery document lacks: {unknown:?}"
    );
    assert!(fake.instances().is_empty());
    let ours = |f: &Value| mentions(f, "npv-full5") || mentions(f, "npv_full5");
    assert!(!fake.firewalls().iter().any(ours));
}

/// Whether any string in `v` contains `needle`.
fn mentions(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|x| mentions(x, needle)),
        Value::Object(m) => m.values().any(|x| mentions(x, needle)),
        _ => false,
    }
}

/// The fields of `operation` (and of its error entries) the Compute discovery document's
/// `Operation` schema does not have.
fn unknown_operation_fields(operation: &Value) -> Vec<String> {
    let schema = &gcp_support::discovery()["schemas"]["Operation"]["properties"];
    let errors = &schema["error"]["properties"]["errors"]["items"]["properties"];
    let mut out: Vec<String> = keys(operation)
        .filter(|k| schema.get(k).is_none())
        .map(str::to_owned)
        .collect();
    for entry in operation["error"]["errors"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.extend(
            keys(entry)
                .filter(|k| errors.get(k).is_none())
                .map(|k| format!("error.errors[].{k}")),
        );
    }
    out
}

fn keys(v: &Value) -> impl Iterator<Item = &str> {
    v.as_object()
        .into_iter()
        .flat_map(|m| m.keys().map(String::as_str))
}
