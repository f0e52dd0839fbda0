//! The GCP client against the fake Compute: the deny-ingress firewall created, and repaired
//! on the next create when someone opened it, SSH through metadata and a per-instance allow
//! rule removed with the instance, operations followed (a stockout is reported by the create
//! itself), `requestId` deduplicating a retried insert, an undo with no instance removing
//! the SSH rule, listing by label, and the catalog.
use levelrail_clouds::{CloudProvider as _, ErrorKind, ServerState};
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::gcp::FakeGcpHandle;
use serde_json::json;

use crate::gcp_support::*;

#[tokio::test]
async fn the_deny_ingress_firewall_is_created_and_repaired_when_changed() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    gcp.create_server(&create_request("fw-1", "npv_fw1"))
        .await
        .expect("create");
    let fw = fake
        .firewalls()
        .into_iter()
        .find(|f| f["name"] == "levelrail-deny-ingress")
        .expect("firewall");
    assert_eq!(
        (
            fw["direction"].clone(),
            fw["denied"].clone(),
            fw["targetTags"].clone()
        ),
        (
            json!("INGRESS"),
            json!([{ "IPProtocol": "all" }]),
            json!(["levelrail-node"])
        )
    );

    // Someone narrows the rule in the console; the next create puts it back.
    assert!(
        fake.edit_firewall("levelrail-deny-ingress", |f| f["sourceRanges"] =
            json!(["10.0.0.0/8"]))
    );
    gcp.create_server(&create_request("fw-2", "npv_fw2"))
        .await
        .expect("create");
    let repaired = fake
        .firewalls()
        .into_iter()
        .find(|f| f["name"] == "levelrail-deny-ingress")
        .expect("firewall");
    assert_eq!(repaired["sourceRanges"], json!(["0.0.0.0/0"]));
    let puts = fake
        .request_log()
        .iter()
        .filter(|r| {
            r.method == "PUT"
                && r.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with("/global/firewalls/levelrail-deny-ingress"))
        })
        .count();
    assert_eq!(puts, 1, "repaired once, left alone while intact");
    let inserts = fake
        .request_log()
        .iter()
        .filter(|r| {
            r.method == "POST"
                && r.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with("/global/firewalls"))
        })
        .count();
    assert_eq!(inserts, 1);
}

#[tokio::test]
async fn the_instance_carries_user_data_keys_labels_and_an_external_address() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let mut req = create_request("meta-1", "npv_meta1");
    req.ssh_source_cidr = Some("198.51.100.4/32".into());
    let info = gcp.create_server(&req).await.expect("create");
    assert_eq!(info.id, format!("{ZONE}/meta-1"));

    let body = fake
        .instances()
        .into_iter()
        .find(|i| i.name == "meta-1")
        .expect("instance")
        .body;
    let items = body["metadata"]["items"].as_array().expect("items").clone();
    let value = |k: &str| {
        items
            .iter()
            .find(|i| i["key"] == k)
            .and_then(|i| i["value"].as_str())
            .map(str::to_owned)
    };
    assert_eq!(value("user-data").as_deref(), Some(req.user_data.as_str()));
    assert_eq!(
        value("ssh-keys"),
        Some(format!("levelrail:{}", operator_key(1)))
    );
    assert_eq!(
        body["networkInterfaces"][0]["accessConfigs"][0]["type"],
        "ONE_TO_ONE_NAT"
    );
    assert_eq!(body["labels"]["levelrail-provision"], "npv_meta1");
    assert_eq!(
        body["tags"]["items"],
        json!(["levelrail-node", "levelrail-ssh-meta-1"])
    );
    let ssh = fake
        .firewalls()
        .into_iter()
        .find(|f| f["name"] == "levelrail-ssh-meta-1")
        .expect("ssh rule");
    assert_eq!(
        (ssh["sourceRanges"].clone(), ssh["priority"].clone()),
        (json!(["198.51.100.4/32"]), json!(800))
    );

    let running = wait_running(&gcp, &info.id).await;
    assert!(
        running
            .ipv4
            .as_deref()
            .is_some_and(|ip| ip.starts_with("34.118."))
    );
    gcp.delete_provision_resources(Some(&info.id), &req.ownership)
        .await
        .expect("delete");
    assert!(
        fake.firewalls()
            .iter()
            .all(|f| f["name"] != "levelrail-ssh-meta-1"),
        "the SSH rule goes with the instance"
    );
    assert!(
        fake.firewalls()
            .iter()
            .any(|f| f["name"] == "levelrail-deny-ingress"),
        "the shared rule stays"
    );
}

#[tokio::test]
async fn a_stockout_is_reported_by_the_create_and_a_lost_answer_is_deduplicated() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let instances = instances_path(&fake);
    fake.faults()
        .inject(Some("POST"), &instances, 1, Fault::Capacity);
    let err = gcp
        .create_server(&create_request("cap-1", "npv_cap1"))
        .await
        .expect_err("stockout");
    assert_eq!(
        (err.kind, err.code.as_str(), err.status),
        (
            ErrorKind::CapacityUnavailable,
            "ZONE_RESOURCE_POOL_EXHAUSTED",
            Some(503)
        )
    );

    fake.faults()
        .inject(Some("POST"), &instances, 1, Fault::ProcessThenDrop);
    gcp.create_server(&create_request("lost-1", "npv_lost1"))
        .await
        .expect("create despite the lost answer");
    assert_eq!(
        fake.create_count_by_label("levelrail-provision", "npv_lost1"),
        1
    );
    let ids: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| r.method == "POST" && r.path.starts_with(&format!("{instances}?")))
        .filter_map(|r| r.path.split("requestId=").nth(1).map(str::to_owned))
        .collect();
    assert!(
        ids.len() >= 3 && ids[1..].iter().all(|i| *i == ids[1]),
        "the retry reused the request id: {ids:?}"
    );
}

#[tokio::test]
async fn an_undo_after_a_failed_insert_removes_the_ssh_rule_made_before_it() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let instances = instances_path(&fake);
    fake.faults()
        .inject(Some("POST"), &instances, 1, Fault::Capacity);
    let mut req = create_request("undo-1", "npv_undo1");
    // The workflow names the instance after the node.
    req.ownership.node_name = req.name.clone();
    req.ssh_source_cidr = Some("198.51.100.4/32".into());
    gcp.create_server(&req).await.expect_err("stockout");
    let ssh_rule = |fake: &FakeGcpHandle| {
        fake.firewalls()
            .iter()
            .any(|f| f["name"] == "levelrail-ssh-undo-1")
    };
    assert!(ssh_rule(&fake), "the SSH rule is made before the instance");

    gcp.delete_provision_resources(None, &req.ownership)
        .await
        .expect("an undo with no instance succeeds");

    assert!(
        !ssh_rule(&fake),
        "the SSH rule of the failed create is gone"
    );
    assert!(
        fake.firewalls()
            .iter()
            .any(|f| f["name"] == "levelrail-deny-ingress"),
        "the shared rule stays"
    );
    assert!(fake.instances().is_empty());
}

#[tokio::test]
async fn listing_is_by_label_and_status_maps_console_changes() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let a = gcp
        .create_server(&create_request("list-1", "npv_list1"))
        .await
        .expect("create");
    let mut other = create_request("list-2", "npv_list2");
    other.ownership.control_plane = "Other Plane".into();
    gcp.create_server(&other).await.expect("create");

    let mine = gcp.list_servers("cp-test").await.expect("list");
    assert_eq!(
        mine.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["list-1"]
    );
    let theirs = gcp.list_servers("Other Plane").await.expect("list");
    assert_eq!(
        theirs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["list-2"],
        "sanitised label values match"
    );
    assert!(fake.set_status(&a.id, "TERMINATED"));
    assert_eq!(
        gcp.get_server(&a.id).await.expect("get").state,
        ServerState::Failed
    );
    let err = gcp
        .delete_provision_resources(Some(&a.id), &other.ownership)
        .await
        .expect_err("not ours");
    assert_eq!(err.code, "not_ours");
    assert_eq!(
        gcp.get_server("no-slash").await.expect_err("bad id").kind,
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn the_catalog_pages_skips_down_zones_and_deprecated_types() {
    let fake = start_fake(|c| c.max_results = 2).await;
    let gcp = client(&fake);
    let regions = gcp.list_regions().await.expect("zones");
    let ids: Vec<&str> = regions.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["us-central1-a", "us-central1-b", "europe-west1-b"]);
    assert_eq!(regions[0].name, "us-central1-a (us-central1)");
    let sizes = crate::prices::priced_sizes(&gcp, ZONE).await;
    assert!(sizes.iter().any(|s| s.id == "e2-small"
        && s.vcpus == 2
        && s.memory_mb == 2048
        && s.pricing.price().is_some_and(|p| p.estimate)));
    assert!(!sizes.iter().any(|s| s.id == "n1-standard-1"), "deprecated");
    let pages = fake
        .request_log()
        .iter()
        .filter(|r| r.path.contains("pageToken="))
        .count();
    assert!(pages >= 3, "followed nextPageToken ({pages})");
}

#[tokio::test]
async fn the_probe_reads_the_project_and_names_a_missing_default_network() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let report = gcp.probe().await.expect("probe");
    assert!(
        report.can_write && report.account.contains("levelrail-fake-1"),
        "{report:?}"
    );
    fake.set_default_network(false);
    let err = gcp.probe().await.expect_err("finding");
    assert_eq!(err.code, "missing_default_network");
    let unauth = client_with(&fake, "ya29.not-issued")
        .probe()
        .await
        .expect_err("refused");
    assert_eq!(unauth.kind, ErrorKind::Unauthorized);
}

#[tokio::test]
async fn the_probe_tests_every_permission_the_client_needs_and_names_the_missing_ones() {
    let fake = start_fake(|_| {}).await;
    let gcp = client(&fake);
    let report = gcp.probe().await.expect("probe");
    assert!(report.can_write, "{report:?}");
    let asked = fake
        .request_log()
        .into_iter()
        .find(|r| r.path.ends_with(":testIamPermissions"))
        .expect("testIamPermissions was called");
    assert_eq!(
        asked.path,
        format!(
            "/v3/projects/{}:testIamPermissions",
            fake.config().project_id
        )
    );
    let names: Vec<String> = asked.body["permissions"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, levelrail_clouds::gcp::REQUIRED_PERMISSIONS);
    assert!(
        fake.request_log()
            .iter()
            .all(|r| r.method == "GET" || r.path.ends_with(":testIamPermissions")),
        "the probe creates nothing"
    );

    // Compute Instance Admin (v1) alone: no firewall can be made.
    fake.deny_permissions(&["compute.firewalls.create", "compute.networks.updatePolicy"]);
    let report = gcp.probe().await.expect("probe");
    assert!(!report.can_write, "{report:?}");
    assert!(
        report.message.contains("compute.firewalls.create")
            && report.message.contains("compute.networks.updatePolicy")
            && report.message.contains("Compute Security Admin")
            && !report.message.contains("compute.instances.create"),
        "{}",
        report.message
    );
    // And the fake refuses what the permission guards, as Compute does.
    let err = gcp
        .create_server(&create_request("perm-1", "npv_perm1"))
        .await
        .expect_err("no firewall permission");
    assert_eq!(err.kind, ErrorKind::Unauthorized, "{err}");
    assert!(err.message.contains("compute.firewalls.create"), "{err}");
}

#[test]
fn the_readme_lists_exactly_the_permissions_the_probe_tests() {
    let listed = crate::readme::text_block("### GCP permissions");
    assert_eq!(listed, levelrail_clouds::gcp::REQUIRED_PERMISSIONS);
}
