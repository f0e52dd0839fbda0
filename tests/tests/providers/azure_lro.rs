//! Long-running operations and deletion: the VM create answered 201 with
//! `Azure-AsyncOperation` is polled until it ends (and a failed operation is a classified
//! error), deletes answered 202 with `Location` are polled until done, a VM whose NIC and
//! public IP survive the delete cascade is cleaned up anyway, transient answers are retried,
//! and the probe names a missing subscription-scope Reader.
use std::time::Duration;

use levelrail_clouds::{CloudProvider as _, ErrorKind};
use levelrail_sim::fakes::Fault;

use crate::azure_support::*;

#[tokio::test]
async fn the_vm_create_follows_azure_async_operation_until_it_succeeds() {
    // Arrange: three VM states of 150 ms, so the operation is in progress for a while.
    let fake = start_fake(|c| c.state_step = Duration::from_millis(150)).await;
    let azure = client(&fake);

    // Act
    azure
        .create_server(&create_request("lro-1", "npv_lro1"))
        .await
        .expect("create");

    // Assert: 201 with the header, then polls answering InProgress, then Succeeded.
    let log = fake.request_log();
    let put = log
        .iter()
        .position(|r| r.method == "PUT" && r.path.contains("/virtualMachines/lro-1?"))
        .expect("PUT");
    assert_eq!(log[put].status, Some(201));
    let polls: Vec<&str> = log[put..]
        .iter()
        .filter(|r| {
            r.method == "GET"
                && r.path
                    .contains("/providers/Microsoft.Compute/locations/westeurope/operations/")
        })
        .map(|r| r.response["status"].as_str().unwrap_or_default())
        .collect();
    assert!(
        polls.len() >= 2 && polls[0] == "InProgress" && polls.last() == Some(&"Succeeded"),
        "{polls:?}"
    );
    let vm = fake
        .vms()
        .into_iter()
        .find(|v| v.name == "lro-1")
        .expect("vm");
    assert_eq!(
        vm.provisioning_state, "Succeeded",
        "create returns once the operation ended"
    );
}

#[tokio::test]
async fn a_failed_operation_is_a_classified_capacity_error() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    fake.faults().inject(Some("PUT"), &format!("/subscriptions/{}/resourceGroups/{GROUP}/providers/Microsoft.Compute/virtualMachines/full-1", fake.config().subscription_id), 1, Fault::Capacity);

    let err = azure
        .create_server(&create_request("full-1", "npv_full1"))
        .await
        .expect_err("no capacity");

    assert_eq!(
        (err.kind, err.code.as_str()),
        (ErrorKind::CapacityUnavailable, "AllocationFailed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_nic_and_public_ip_that_survive_the_cascade_are_deleted_anyway() {
    // Arrange: a VM, and an ARM whose delete cascade leaves the NIC and public IP behind.
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let req = create_request("keep-1", "npv_keep1");
    let info = azure.create_server(&req).await.expect("create");
    fake.set_network_cascade(false);
    fake.clear_request_log();

    // Act
    azure
        .delete_provision_resources(Some(&info.id), &req.ownership)
        .await
        .expect("delete");

    // Assert: nothing of the provision is left, and the survivors were deleted explicitly.
    let left: Vec<String> = fake
        .resources()
        .into_iter()
        .filter(|(_, n, _)| n.starts_with("keep-1"))
        .map(|(k, n, _)| format!("{k}/{n}"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let log = fake.request_log();
    for what in [
        "/virtualMachines/keep-1?",
        "/networkInterfaces/keep-1-nic?",
        "/publicIPAddresses/keep-1-pip?",
        "/networkSecurityGroups/keep-1-nsg?",
    ] {
        assert!(
            log.iter()
                .any(|r| r.method == "DELETE" && r.path.contains(what)),
            "DELETE {what}"
        );
    }
    let nic = log
        .iter()
        .position(|r| r.method == "DELETE" && r.path.contains("/networkInterfaces/"))
        .expect("nic");
    let pip = log
        .iter()
        .position(|r| r.method == "DELETE" && r.path.contains("/publicIPAddresses/"))
        .expect("pip");
    assert!(nic < pip, "the NIC holding the IP goes first");
    let location_polls = log
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/operationResults/"))
        .count();
    assert!(location_polls >= 1, "the VM delete's Location was followed");
    azure
        .delete_provision_resources(Some(&info.id), &req.ownership)
        .await
        .expect("a second delete is fine");
}

#[tokio::test]
async fn with_a_working_cascade_only_the_nsg_needs_deleting() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let req = create_request("casc-1", "npv_casc1");
    azure.create_server(&req).await.expect("create");
    fake.clear_request_log();
    azure
        .delete_provision_resources(Some("casc-1"), &req.ownership)
        .await
        .expect("delete");
    let deletes: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| {
            r.path
                .split('?')
                .next()
                .unwrap_or_default()
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        deletes,
        ["casc-1", "casc-1-nsg"],
        "the cascade removed NIC, IP and disk; verified, not assumed"
    );
    assert!(
        fake.resources()
            .iter()
            .all(|(_, n, _)| !n.starts_with("casc-1"))
    );
}

#[tokio::test]
async fn throttling_and_server_errors_are_retried() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let sub = fake.config().subscription_id.clone();
    fake.faults().inject(Some("PUT"), &format!("/subscriptions/{sub}/resourceGroups/{GROUP}/providers/Microsoft.Network/publicIPAddresses/"), 1, Fault::RateLimited { retry_after_secs: 1 });
    fake.faults().inject(Some("PUT"), &format!("/subscriptions/{sub}/resourceGroups/{GROUP}/providers/Microsoft.Compute/virtualMachines/"), 1, Fault::InternalError);
    fake.faults().inject(
        Some("GET"),
        &format!("/subscriptions/{sub}/providers/Microsoft.Compute/locations/"),
        1,
        Fault::DropConnection,
    );
    azure
        .create_server(&create_request("retry-1", "npv_retry1"))
        .await
        .expect("create despite faults");
    assert_eq!(
        fake.create_count_by_tag("levelrail-provision", "npv_retry1"),
        1
    );
}

#[tokio::test]
async fn the_probe_names_a_missing_subscription_reader_and_a_read_only_principal() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    let ok = azure.probe().await.expect("probe");
    assert!(ok.can_write && ok.account.contains(GROUP), "{ok:?}");

    fake.set_subscription_reader(false);
    let err = azure.probe().await.expect_err("finding");
    assert_eq!(err.code, "missing_subscription_reader");
    assert!(
        err.message.contains("Reader") && err.message.contains("pickers"),
        "{err}"
    );
    assert_eq!(
        azure.list_regions().await.expect_err("pickers fail").kind,
        ErrorKind::Unauthorized
    );

    fake.set_subscription_reader(true);
    fake.set_contributor(false);
    let read_only = azure.probe().await.expect("probe");
    assert!(
        !read_only.can_write
            && read_only
                .message
                .contains("Microsoft.Compute/virtualMachines/write"),
        "{read_only:?}"
    );

    let missing = client_with(&fake, &fake.mint_token(), "gone-rg")
        .probe()
        .await
        .expect_err("no group");
    assert_eq!(missing.code, "resource_group_missing");
}
