//! The Azure client against the fake ARM: the create chain in an existing resource group
//! (never created), the shared VNet created once without clobbering subnets added later, an
//! NSG with no inbound rule unless SSH is asked for, tags and `deleteOption` everywhere,
//! password auth only without keys, power state in the status, listing by tag across pages,
//! and the catalog.
use levelrail_clouds::{CloudProvider as _, ErrorKind, ServerState};
use serde_json::Value;

use crate::azure_support::*;

const NICS: &str = "Microsoft.Network/networkInterfaces";
const VNETS: &str = "Microsoft.Network/virtualNetworks";

#[tokio::test]
async fn a_create_builds_the_whole_chain_tagged_with_cascading_delete_options() {
    // Arrange
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);

    // Act
    let info = azure
        .create_server(&create_request("web-1", "npv_chain1"))
        .await
        .expect("create");

    // Assert: every resource exists and carries the ownership tags (the VNet: the control plane's).
    assert_eq!(
        (info.id.as_str(), info.provision_id.as_deref()),
        ("web-1", Some("npv_chain1"))
    );
    let resources = fake.resources();
    for (kind, name) in [
        ("Microsoft.Compute/virtualMachines", "web-1"),
        (NICS, "web-1-nic"),
        ("Microsoft.Network/publicIPAddresses", "web-1-pip"),
        ("Microsoft.Network/networkSecurityGroups", "web-1-nsg"),
    ] {
        let (_, _, tags) = resources
            .iter()
            .find(|(k, n, _)| k == kind && n == name)
            .unwrap_or_else(|| panic!("{kind} {name}"));
        assert_eq!(
            tags.get("levelrail-provision").map(String::as_str),
            Some("npv_chain1"),
            "{kind}"
        );
        assert_eq!(
            tags.get("levelrail-control-plane").map(String::as_str),
            Some("cp-test"),
            "{kind}"
        );
    }
    assert!(
        resources
            .iter()
            .any(|(k, n, _)| k == "Microsoft.Compute/disks" && n == "web-1-osdisk")
    );
    assert!(
        resources
            .iter()
            .any(|(k, n, _)| k == VNETS && n == "levelrail-vnet-westeurope")
    );
    let log = fake.request_log();
    let vm_put = log
        .iter()
        .find(|r| r.method == "PUT" && r.path.contains("/virtualMachines/web-1?"))
        .expect("VM PUT");
    let b = &vm_put.body;
    assert_eq!(
        b.pointer("/properties/storageProfile/osDisk/deleteOption"),
        Some(&Value::from("Delete"))
    );
    assert_eq!(
        b.pointer("/properties/networkProfile/networkInterfaces/0/properties/deleteOption"),
        Some(&Value::from("Delete"))
    );
    assert_eq!(
        b.pointer("/properties/storageProfile/imageReference/offer"),
        Some(&Value::from("ubuntu-24_04-lts"))
    );
    assert_eq!(
        b.pointer("/properties/osProfile/linuxConfiguration/disablePasswordAuthentication"),
        Some(&Value::from(true))
    );
    assert!(b.pointer("/properties/osProfile/adminPassword").is_none());
    let nic_put = log
        .iter()
        .find(|r| r.method == "PUT" && r.path.contains("/networkInterfaces/web-1-nic?"))
        .expect("NIC PUT");
    assert_eq!(
        nic_put.body.pointer(
            "/properties/ipConfigurations/0/properties/publicIPAddress/properties/deleteOption"
        ),
        Some(&Value::from("Delete"))
    );
    let vm = fake
        .vms()
        .into_iter()
        .find(|v| v.name == "web-1")
        .expect("vm");
    assert_eq!(
        vm.user_data, "#cloud-config\nruncmd: [echo hello]\n",
        "customData is the base64 of the user-data"
    );
    let nsg_put = log
        .iter()
        .find(|r| r.method == "PUT" && r.path.contains("/networkSecurityGroups/"))
        .expect("NSG PUT");
    assert_eq!(
        nsg_put.body.pointer("/properties/securityRules"),
        Some(&Value::Array(vec![])),
        "no inbound rule"
    );
    assert!(
        !log.iter().any(|r| r.method == "PUT"
            && r.path
                .to_ascii_lowercase()
                .contains("/resourcegroups/levelrail-nodes?")),
        "the group is never PUT"
    );
}

#[tokio::test]
async fn a_missing_resource_group_fails_clearly_and_is_never_created() {
    let fake = start_fake(|_| {}).await;
    let azure = client_with(&fake, &fake.mint_token(), "not-there");
    let err = azure
        .create_server(&create_request("web-1", "npv_norg"))
        .await
        .expect_err("no group");
    assert_eq!(
        (err.kind, err.code.as_str()),
        (ErrorKind::InvalidRequest, "resource_group_missing")
    );
    assert!(
        err.message.contains("not-there") && err.message.contains("never creates"),
        "{err}"
    );
    assert!(
        fake.request_log().iter().all(|r| r.method == "GET"),
        "nothing was written"
    );
}

#[tokio::test]
async fn the_vnet_is_created_once_and_subnets_added_later_survive() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    azure
        .create_server(&create_request("web-1", "npv_vnet1"))
        .await
        .expect("first");
    assert!(fake.add_subnet(
        GROUP,
        "levelrail-vnet-westeurope",
        "operators-own",
        "10.60.9.0/24"
    ));

    azure
        .create_server(&create_request("web-2", "npv_vnet2"))
        .await
        .expect("second");

    let subnets: Vec<String> = names_of(&fake, "Microsoft.Network/virtualNetworks/subnets");
    assert!(
        subnets.contains(&"operators-own".to_owned())
            && subnets.contains(&"levelrail-nodes".to_owned()),
        "{subnets:?}"
    );
    let vnet_puts = fake
        .request_log()
        .iter()
        .filter(|r| {
            r.method == "PUT"
                && r.path
                    .contains("/virtualNetworks/levelrail-vnet-westeurope?")
        })
        .count();
    assert_eq!(vnet_puts, 1, "an existing VNet is never PUT again");
}

#[tokio::test]
async fn ssh_is_opened_only_from_the_operators_cidr_and_keyless_vms_get_a_throwaway_password() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let mut req = create_request("web-ssh", "npv_ssh1");
    req.ssh_source_cidr = Some("203.0.113.7/32".into());
    req.ssh_public_keys.clear();

    azure.create_server(&req).await.expect("create");

    let log = fake.request_log();
    let rules = log
        .iter()
        .find(|r| r.method == "PUT" && r.path.contains("/networkSecurityGroups/web-ssh-nsg?"))
        .expect("NSG")
        .body["properties"]["securityRules"]
        .clone();
    assert_eq!(rules.as_array().map(Vec::len), Some(1));
    assert_eq!(
        rules[0]["properties"]["sourceAddressPrefix"],
        "203.0.113.7/32"
    );
    assert_eq!(rules[0]["properties"]["destinationPortRange"], "22");
    let vm = &log
        .iter()
        .find(|r| r.method == "PUT" && r.path.contains("/virtualMachines/web-ssh?"))
        .expect("VM")
        .body["properties"]["osProfile"];
    assert_eq!(
        vm["linuxConfiguration"]["disablePasswordAuthentication"],
        false
    );
    let password = vm["adminPassword"].as_str().expect("a password");
    assert!(password.len() >= 24 && password.starts_with("Lr9!"));
}

#[tokio::test]
async fn a_repeated_create_adopts_and_a_foreign_vm_of_the_same_name_is_refused() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let first = azure
        .create_server(&create_request("web-1", "npv_idem1"))
        .await
        .expect("create");
    let again = azure
        .create_server(&create_request("web-1", "npv_idem1"))
        .await
        .expect("again");
    assert_eq!(first.id, again.id);
    assert_eq!(
        fake.create_count_by_tag("levelrail-provision", "npv_idem1"),
        1
    );
    let err = azure
        .create_server(&create_request("web-1", "npv_other"))
        .await
        .expect_err("taken");
    assert_eq!(err.code, "name_taken");
}

#[tokio::test]
async fn status_needs_the_power_state_and_listing_follows_next_links() {
    let fake = start_fake(|c| c.page_size = 2).await;
    let azure = client(&fake);
    for (name, pid) in [("web-1", "npv_l1"), ("web-2", "npv_l2")] {
        azure
            .create_server(&create_request(name, pid))
            .await
            .expect("create");
    }
    let running = wait_running(&azure, "web-1").await;
    assert!(
        running
            .ipv4
            .as_deref()
            .is_some_and(|ip| ip.starts_with("20.50.")),
        "{running:?}"
    );
    assert!(running.provider_state.ends_with("/running"));
    assert!(fake.set_power("web-1", "deallocated"));
    assert_eq!(
        azure.get_server("web-1").await.expect("get").state,
        ServerState::Failed
    );

    let listed = azure.list_servers("cp-test").await.expect("list");
    let mut names: Vec<String> = listed.iter().map(|s| s.name.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        ["web-1", "web-2"],
        "found across pages of 2 resources"
    );
    assert!(
        fake.request_log()
            .iter()
            .any(|r| r.path.contains("$skiptoken=")),
        "a nextLink was followed"
    );
    assert!(
        azure
            .list_servers("another-cp")
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(
        azure.get_server("nope").await.expect_err("missing").kind,
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn the_catalog_lists_physical_locations_and_sizes_with_their_retail_prices() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let regions = azure.list_regions().await.expect("regions");
    assert!(
        regions
            .iter()
            .any(|r| r.id == "westeurope" && r.name == "West Europe")
    );
    assert!(
        !regions.iter().any(|r| r.id == "europe"),
        "logical regions are skipped"
    );
    let sizes = crate::prices::priced_sizes(&azure, "westeurope").await;
    let b2s = sizes.iter().find(|s| s.id == "Standard_B2s").expect("B2s");
    assert_eq!(
        (
            b2s.vcpus,
            b2s.memory_mb,
            b2s.disk_gb,
            b2s.pricing.price().map(|p| p.monthly.as_str())
        ),
        // 0.04576 USD an hour in West Europe, 730 hours.
        (2, 4096, 0, Some("33.40"))
    );
    assert!(
        !sizes.iter().any(|s| s.id == "Standard_D4s_v5"),
        "not sold there"
    );
    assert_eq!(
        azure.list_sizes("").await.expect_err("no region").kind,
        ErrorKind::InvalidRequest
    );
}
