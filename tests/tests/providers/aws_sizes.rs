//! Live AWS sizes against the fake EC2: `DescribeInstanceTypes` (current generation, not
//! bare metal, x86_64 or arm64) intersected with the region's
//! `DescribeInstanceTypeOfferings`, every page followed; arm64 types are `aarch64` sizes,
//! which the control plane marks unavailable without an aarch64 agent, and which launch
//! Canonical's arm64 image when it has one. Prices come from the fake's Price List.
use levelrail_clouds::{CloudProvider as _, ErrorKind, Size};
use levelrail_provisioner::cloudinit::{AgentDownload, AgentSource};
use levelrail_types::CpuArch;

use crate::aws_support::{REGION, client, create_request, start_fake};

/// The sizes the fake's types give in `REGION`, by vCPUs, memory, then id.
const EXPECTED: [&str; 11] = [
    "t3.nano",
    "t3.micro",
    "t4g.micro",
    "t3.small",
    "t4g.small",
    "t3.medium",
    "m7g.large",
    "m7i.large",
    "t3.large",
    "t3.xlarge",
    "t3.2xlarge",
];

fn ids(sizes: &[Size]) -> Vec<&str> {
    sizes.iter().map(|s| s.id.as_str()).collect()
}

#[tokio::test]
async fn sizes_come_from_the_live_calls_limited_to_the_regions_offerings_with_their_prices() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);

    let sizes = crate::prices::priced_sizes(&aws, REGION).await;

    // Not the previous-generation t1, not bare metal (m7i.metal-24xl, mac2.metal), and
    // not c7a.large, which only two US regions offer.
    assert_eq!(ids(&sizes), EXPECTED);
    let micro = &sizes[1];
    assert_eq!(
        (
            micro.name.as_str(),
            micro.vcpus,
            micro.memory_mb,
            micro.disk_gb
        ),
        ("t3.micro (2 vCPU, 1 GiB)", 2, 1024, 20)
    );
    // 0.01196 USD an hour in eu-west-1, 730 hours; every size is in the price list.
    let price = micro.pricing.price().expect("a price");
    assert_eq!(
        (price.monthly.as_str(), price.basis.as_str()),
        ("8.73", "730 h × 0.01196 USD/h")
    );
    assert!(sizes.iter().all(|s| s.pricing.price().is_some()));
    let offerings = fake
        .requests()
        .into_iter()
        .find(|r| r.action == "DescribeInstanceTypeOfferings")
        .expect("offerings asked");
    let param = |k: &str| offerings.params.get(k).map(String::as_str);
    assert_eq!(param("LocationType"), Some("region"));
    assert_eq!(
        (param("Filter.1.Name"), param("Filter.1.Value.1")),
        (Some("location"), Some(REGION))
    );
    let us = crate::prices::priced_sizes(&aws, "us-east-1").await;
    assert!(ids(&us).contains(&"c7a.large"), "{:?}", ids(&us));
}

#[tokio::test]
async fn arm64_types_are_aarch64_sizes_marked_unavailable_without_an_aarch64_agent() {
    let fake = start_fake(|_| {}).await;
    let sizes = crate::prices::priced_sizes(&client(&fake), REGION).await;
    let arch = |id: &str| sizes.iter().find(|s| s.id == id).map(|s| s.architecture);
    assert_eq!(arch("t4g.small"), Some(CpuArch::Aarch64));
    assert_eq!(arch("m7g.large"), Some(CpuArch::Aarch64));
    assert_eq!(arch("t3.small"), Some(CpuArch::X86_64));

    // What the catalog applies to every size: the agents this control plane serves.
    let served = |archs: &[CpuArch]| {
        AgentSource::Binary(AgentDownload {
            base_url: "https://cp.example/v1/agent/1".into(),
            sha256: archs.iter().map(|a| (*a, "0".repeat(64))).collect(),
        })
    };
    let x86_only = served(&[CpuArch::X86_64]);
    for s in &sizes {
        let reason = x86_only.unavailable_on(s.architecture);
        match s.architecture {
            CpuArch::Aarch64 => assert!(
                reason.as_deref().is_some_and(|r| r.contains("aarch64")),
                "{}: {reason:?}",
                s.id
            ),
            CpuArch::X86_64 => assert_eq!(reason, None, "{}", s.id),
        }
    }
    let both = served(&[CpuArch::X86_64, CpuArch::Aarch64]);
    assert!(
        sizes
            .iter()
            .all(|s| both.unavailable_on(s.architecture).is_none())
    );
}

#[tokio::test]
async fn pagination_is_followed_for_types_and_offerings() {
    let fake = start_fake(|c| c.page_limit = 5).await;

    let sizes = crate::prices::priced_sizes(&client(&fake), REGION).await;

    assert_eq!(ids(&sizes), EXPECTED, "every page was read");
    for action in ["DescribeInstanceTypes", "DescribeInstanceTypeOfferings"] {
        let calls: Vec<_> = fake
            .requests()
            .into_iter()
            .filter(|r| r.action == action)
            .collect();
        assert!(calls.len() >= 3, "{action}: {} pages", calls.len());
        assert!(!calls[0].params.contains_key("NextToken"));
        assert!(
            calls[1..]
                .iter()
                .all(|r| r.params.contains_key("NextToken")),
            "{action} follows NextToken"
        );
    }
}

#[tokio::test]
async fn an_arm64_size_launches_canonicals_arm64_ubuntu_image() {
    let fake = start_fake(|_| {}).await;
    let mut req = create_request("cp-size", "arm-1", "npv_arm1");
    req.size = "t4g.small".into();

    client(&fake).create_server(&req).await.expect("create");

    let instances = fake.instances();
    assert_eq!(instances.len(), 1, "{instances:?}");
    assert_eq!(instances[0].instance_type, "t4g.small");
    assert_eq!(
        instances[0].image_id, "ami-0a1b2c3d4e5f60004",
        "the arm64 noble build"
    );
}

#[tokio::test]
async fn a_type_the_region_does_not_offer_is_refused_in_every_zone_as_unsupported() {
    let fake = start_fake(|_| {}).await;
    let mut req = create_request("cp-size", "c7a-1", "npv_c7a1");
    req.size = "c7a.large".into();

    let err = client(&fake)
        .create_server(&req)
        .await
        .expect_err("not offered in eu-west-1");

    assert_eq!(
        (err.kind, err.code.as_str()),
        (ErrorKind::CapacityUnavailable, "Unsupported")
    );
    assert!(fake.instances().is_empty());
    let unknown = {
        req.size = "x9.huge".into();
        req.ownership.provision_id = "npv_x9".into();
        client(&fake)
            .create_server(&req)
            .await
            .expect_err("unknown type")
    };
    assert_eq!(
        (unknown.kind, unknown.code.as_str()),
        (ErrorKind::InvalidRequest, "InvalidInstanceType")
    );
}
