//! The AWS client against moto, an independent EC2 implementation (validation flags on):
//! a create retried after a lost answer adopts the same instance (launched in the first
//! zone's default subnet with that subnet's token), deleting an SSH-opted-in node leaves no
//! security group and no key pair, and the live sizes are moto's offered types. Skipped with a note when
//! `moto_server` is not installed, unless `LEVELRAIL_REQUIRE_MOTO=1`.
use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use levelrail_clouds::CloudProvider as _;
use levelrail_clouds::aws::http_client;
use levelrail_types::CpuArch;

use crate::aws_support::{MOTO_IMAGE, Moto, REGION, create_request};

/// A raw EC2 client of moto, to look behind the provider's back.
fn raw(moto: &Moto) -> aws_sdk_ec2::Client {
    let config = aws_sdk_ec2::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new(
            "AKIAMOTOTESTKEY00001",
            "motoSecret",
            None,
            None,
            "test",
        ))
        .endpoint_url(moto.endpoint())
        .http_client(http_client())
        .build();
    aws_sdk_ec2::Client::from_conf(config)
}

fn tag_filter(key: &str, value: &str) -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder()
        .name(format!("tag:{key}"))
        .values(value)
        .build()
}

/// The default VPC's default subnet of the first zone, looked up behind the client's back.
async fn first_default_subnet(moto: &Moto) -> String {
    let out = raw(moto)
        .describe_subnets()
        .filters(
            aws_sdk_ec2::types::Filter::builder()
                .name("default-for-az")
                .values("true")
                .build(),
        )
        .send()
        .await
        .expect("subnets");
    let mut subnets: Vec<(&str, &str)> = out
        .subnets()
        .iter()
        .filter_map(|s| Some((s.availability_zone()?, s.subnet_id()?)))
        .collect();
    subnets.sort();
    subnets.first().expect("a default subnet").1.to_owned()
}

#[tokio::test]
async fn at_moto_a_create_retried_after_a_lost_answer_adopts_the_same_instance() {
    let Some(moto) = Moto::start() else { return };
    let mut req = create_request("cp-moto-crash", "crash-1", "npv_moto_crash1");
    req.image = Some(MOTO_IMAGE.into());
    // The first attempt launches; its answer is lost with the process.
    let first = moto.client().create_server(&req).await.expect("create");
    // After a restart, a new client retries the provision.
    let again = moto.client().create_server(&req).await.expect("retry");
    assert_eq!(first.id, again.id);
    let live = raw(&moto)
        .describe_instances()
        .filters(tag_filter("levelrail-provision", "npv_moto_crash1"))
        .send()
        .await
        .expect("describe");
    let instances: Vec<_> = live
        .reservations()
        .iter()
        .flat_map(|r| r.instances())
        .collect();
    assert_eq!(instances.len(), 1, "no second instance");
    let first_subnet = first_default_subnet(&moto).await;
    assert_eq!(
        instances[0].subnet_id(),
        Some(first_subnet.as_str()),
        "the first zone's default subnet"
    );
    assert_eq!(
        instances[0].client_token(),
        Some(format!("npv_moto_crash1/{first_subnet}/t3.micro").as_str()),
        "launched with the provision's ClientToken for that subnet"
    );
    assert_eq!(
        instances[0].instance_type().map(|t| t.as_str()),
        Some("t3.micro")
    );
}

#[tokio::test]
async fn at_moto_deleting_an_ssh_opted_in_node_leaves_no_security_group_and_no_key_pair() {
    let Some(moto) = Moto::start() else { return };
    let aws = moto.client();
    let mut req = create_request("cp-moto-ssh", "ssh-1", "npv_moto_ssh1");
    req.image = Some(MOTO_IMAGE.into());
    req.ssh_source_cidr = Some("203.0.113.7/32".into());
    let created = aws.create_server(&req).await.expect("create");
    let ec2 = raw(&moto);
    let groups = ec2
        .describe_security_groups()
        .filters(tag_filter("levelrail-provision", "npv_moto_ssh1"))
        .send()
        .await
        .expect("groups");
    let [g] = groups.security_groups() else {
        panic!("one dedicated group: {groups:?}")
    };
    let rules: Vec<(Option<i32>, Vec<&str>)> = g
        .ip_permissions()
        .iter()
        .map(|p| {
            (
                p.from_port(),
                p.ip_ranges().iter().filter_map(|r| r.cidr_ip()).collect(),
            )
        })
        .collect();
    assert_eq!(rules, vec![(Some(22), vec!["203.0.113.7/32"])]);
    let keys = ec2
        .describe_key_pairs()
        .filters(tag_filter("levelrail-provision", "npv_moto_ssh1"))
        .send()
        .await
        .expect("keys");
    assert_eq!(
        keys.key_pairs().len(),
        1,
        "the key pair was imported and tagged"
    );

    aws.delete_provision_resources(Some(&created.id), &req.ownership)
        .await
        .expect("delete");
    let groups = ec2
        .describe_security_groups()
        .filters(tag_filter("levelrail-provision", "npv_moto_ssh1"))
        .send()
        .await
        .expect("groups");
    assert!(groups.security_groups().is_empty(), "{groups:?}");
    let keys = ec2.describe_key_pairs().send().await.expect("keys");
    assert!(
        keys.key_pairs()
            .iter()
            .all(|k| k.key_name() != Some("levelrail-npv_moto_ssh1")),
        "{keys:?}"
    );
    let state = aws
        .get_server(&created.id)
        .await
        .expect("get")
        .provider_state;
    assert_eq!(state, "terminated");
}

#[tokio::test]
async fn at_moto_the_probe_names_the_account_and_proves_run_instances_with_a_dry_run() {
    let Some(moto) = Moto::start() else { return };
    let report = moto.client().probe().await.expect("probe");
    assert!(report.can_write, "{}", report.message);
    assert_eq!(report.account.len(), 12, "{}", report.account);
}

#[tokio::test]
async fn at_moto_sizes_are_the_regions_offered_types_with_arm64_ones_as_aarch64() {
    let Some(moto) = Moto::start() else { return };
    let sizes = moto.client().list_sizes(REGION).await.expect("sizes");
    let offered = raw(&moto)
        .describe_instance_type_offerings()
        .location_type(aws_sdk_ec2::types::LocationType::Region)
        .send()
        .await
        .expect("offerings");
    let offered: std::collections::BTreeSet<&str> = offered
        .instance_type_offerings()
        .iter()
        .filter_map(|o| o.instance_type().map(|t| t.as_str()))
        .collect();
    let find = |id: &str| sizes.iter().find(|s| s.id == id);
    assert_eq!(
        find("t3.micro").map(|s| (s.architecture, s.vcpus, s.memory_mb)),
        Some((CpuArch::X86_64, 2, 1024))
    );
    assert_eq!(
        find("t4g.micro").map(|s| s.architecture),
        Some(CpuArch::Aarch64)
    );
    assert!(find("t1.micro").is_none(), "previous generation");
    assert!(
        sizes.iter().all(|s| !s.id.contains("metal")),
        "no bare metal"
    );
    assert!(
        sizes.iter().all(|s| offered.contains(s.id.as_str())),
        "only the region's offerings"
    );
}
