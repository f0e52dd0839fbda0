//! Azure VM sizes come from Resource SKUs: a size the subscription may not use in the
//! location, or one that cannot boot the image's Hyper-V generation, is listed unavailable
//! with the reason (and the fake refuses to create it, as ARM does); every page is read; a
//! principal without `Microsoft.Compute/skus/read` is named by the probe.
use levelrail_clouds::{CloudProvider as _, ErrorKind, Size};
use levelrail_types::CpuArch;

use crate::azure_support::*;

fn find<'a>(sizes: &'a [Size], id: &str) -> &'a Size {
    sizes
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("{id} is listed: {sizes:?}"))
}

#[tokio::test]
async fn restricted_and_generation_1_only_sizes_are_listed_unavailable_with_the_reason() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);

    let sizes = azure.list_sizes(LOCATION).await.expect("sizes");

    let b2s = find(&sizes, "Standard_B2s");
    assert_eq!(
        (
            b2s.vcpus,
            b2s.memory_mb,
            b2s.architecture,
            &b2s.unavailable_reason
        ),
        (2, 4096, CpuArch::X86_64, &None)
    );
    let gen1 = find(&sizes, "Standard_A1_v2");
    let reason = gen1.unavailable_reason.as_deref().expect("gen1 only");
    assert!(
        reason.contains("generation V1") && reason.contains("needs V2"),
        "{reason}"
    );
    let restricted = find(&sizes, "Standard_E2s_v5");
    let reason = restricted
        .unavailable_reason
        .as_deref()
        .expect("restricted");
    assert!(
        reason.contains("NotAvailableForSubscription") && reason.contains(LOCATION),
        "{reason}"
    );
    // A zone restriction does not stop a regional VM.
    assert_eq!(find(&sizes, "Standard_D2s_v5").unavailable_reason, None);
    // The SKU's CpuArchitectureType says Arm; the agent check is the provisioner's.
    let arm = find(&sizes, "Standard_D2ps_v5");
    assert_eq!(
        (arm.architecture, &arm.unavailable_reason),
        (CpuArch::Aarch64, &None)
    );
    assert!(
        !sizes.iter().any(|s| s.id == "Standard_D4s_v5"),
        "not sold here"
    );
    let elsewhere = azure.list_sizes("northeurope").await.expect("sizes");
    assert!(
        find(&elsewhere, "Standard_F2s_v2")
            .unavailable_reason
            .as_deref()
            .is_some_and(|r| r.contains("QuotaId")),
        "{elsewhere:?}"
    );
    assert_eq!(find(&elsewhere, "Standard_E2s_v5").unavailable_reason, None);
}

#[tokio::test]
async fn every_page_of_the_sku_list_is_read() {
    let fake = start_fake(|c| c.page_size = 2).await;
    let azure = client(&fake);

    let sizes = azure.list_sizes(LOCATION).await.expect("sizes");

    assert_eq!(sizes.len(), 7, "{sizes:?}");
    let pages = fake
        .request_log()
        .iter()
        .filter(|r| r.path.contains("/providers/Microsoft.Compute/skus?"))
        .count();
    assert_eq!(pages, 4);
}

#[tokio::test]
async fn creating_a_size_listed_unavailable_is_refused_as_arm_refuses_it() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);

    let mut gen1 = create_request("gen1-1", "npv_gen1");
    gen1.size = "Standard_A1_v2".into();
    let mut restricted = create_request("restricted-1", "npv_restricted");
    restricted.size = "Standard_E2s_v5".into();
    let gen1 = azure.create_server(&gen1).await.expect_err("gen1 only");
    let restricted = azure
        .create_server(&restricted)
        .await
        .expect_err("restricted");

    assert_eq!(gen1.kind, ErrorKind::InvalidRequest, "{gen1}");
    assert!(
        gen1.message
            .contains("cannot boot Hypervisor Generation '2'"),
        "{gen1}"
    );
    assert_eq!(
        (restricted.kind, restricted.code.as_str()),
        (ErrorKind::CapacityUnavailable, "SkuNotAvailable"),
        "{restricted}"
    );
    assert!(fake.vms().is_empty());
}

#[tokio::test]
async fn a_principal_without_the_sku_read_is_named_by_the_probe_and_refused_by_arm() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    fake.set_subscription_actions(Some(&["Microsoft.Resources/subscriptions/locations/read"]));

    let finding = azure.probe().await.expect_err("finding");
    let refused = azure.list_sizes(LOCATION).await.expect_err("refused");

    assert_eq!(finding.code, "missing_subscription_reader");
    assert!(
        finding
            .message
            .contains("lacks Microsoft.Compute/skus/read in subscription"),
        "{finding}"
    );
    assert_eq!(refused.kind, ErrorKind::Unauthorized, "{refused}");
    assert!(
        refused.message.contains("Microsoft.Compute/skus/read"),
        "{refused}"
    );
    azure.list_regions().await.expect("locations may be read");
}
