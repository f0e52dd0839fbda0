//! The AWS client against the fake EC2: the image, network and security-group choices, what
//! `RunInstances` carries (ClientToken, base64 user-data, tags on the instance, its volume
//! and its interface, a public IP, IMDSv2), SSH opt-in and its cleanup, an operator-named
//! subnet, crash-retry adoption, error classification and the probe.
use std::time::Duration;

use levelrail_clouds::{CloudProvider as _, ErrorKind, ServerState};
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::aws::NEWEST_NOBLE;

use crate::aws_support::{
    REGION, client, client_with, create_request, fast_policy, operator_key, settings, start_fake,
};

#[tokio::test]
async fn regions_have_console_names_and_opted_out_ones_are_hidden() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);
    let regions = aws.list_regions().await.expect("regions");
    let ireland = regions
        .iter()
        .find(|r| r.id == "eu-west-1")
        .expect("eu-west-1");
    assert_eq!(ireland.name, "Europe (Ireland)");
    assert!(
        regions.iter().all(|r| r.id != "af-south-1"),
        "not-opted-in regions are hidden"
    );
}

#[tokio::test]
async fn a_create_launches_the_newest_ubuntu_2404_in_the_default_subnet_with_tags_everywhere() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);
    let req = create_request("cp-a", "web-1", "npv_create1");
    let created = aws.create_server(&req).await.expect("create");
    assert!(created.id.starts_with("eu-west-1/i-"), "{}", created.id);
    assert_eq!(created.state, ServerState::Pending);
    let instances = fake.instances();
    let [i] = instances.as_slice() else {
        panic!("one instance: {instances:?}")
    };
    assert_eq!(
        i.image_id, NEWEST_NOBLE,
        "Canonical's newest available amd64 noble image"
    );
    assert_eq!(i.instance_type, "t3.micro");
    assert_eq!(
        i.user_data, req.user_data,
        "user-data arrives base64-decoded intact"
    );
    assert_eq!(
        i.client_token,
        format!("npv_create1/{}/t3.micro", i.subnet_id),
        "ClientToken derived from the provision id, the subnet and the type"
    );
    assert_eq!(
        i.subnet_id,
        fake.default_subnets(REGION)[0].1,
        "the first zone's default subnet"
    );
    assert_eq!(i.http_tokens, "required", "IMDSv2 only");
    assert!(i.public_ip.is_some(), "a public IP");
    for tags in [
        Some(&i.tags),
        i.eni_tags.as_ref(),
        i.volume.as_ref().map(|v| &v.0),
    ] {
        let tags = tags.expect("tagged resource exists");
        assert_eq!(
            tags.get("levelrail-provision").map(String::as_str),
            Some("npv_create1")
        );
        assert_eq!(
            tags.get("levelrail-control-plane").map(String::as_str),
            Some("cp-a")
        );
        assert_eq!(tags.get("Name").map(String::as_str), Some("web-1"));
    }
    assert_eq!(
        i.volume.as_ref().map(|v| (v.1, v.2.as_str())),
        Some((20, "gp3"))
    );
    // The shared group: zero ingress, the only group of the instance.
    let groups = fake.groups();
    let [g] = groups.as_slice() else {
        panic!("one group: {groups:?}")
    };
    assert_eq!(
        (g.name.as_str(), g.ingress.len()),
        ("levelrail-cp-a-nodes", 0)
    );
    assert_eq!(i.groups, vec![g.id.clone()]);
    // The operator's key, imported as the provision's key pair.
    let keys = fake.key_pairs();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        (keys[0].1.as_str(), keys[0].2.as_str()),
        ("levelrail-npv_create1", operator_key(1).as_str())
    );
    assert_eq!(i.key_name.as_deref(), Some("levelrail-npv_create1"));
}

#[tokio::test]
async fn ingress_found_on_the_shared_group_is_revoked_when_it_is_reused() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);
    aws.create_server(&create_request("cp-b", "a-1", "npv_reuse1"))
        .await
        .expect("first");
    let group = fake.groups()[0].id.clone();
    assert!(
        fake.add_ingress(&group, 22, "0.0.0.0/0"),
        "someone opened SSH by hand"
    );
    aws.create_server(&create_request("cp-b", "a-2", "npv_reuse2"))
        .await
        .expect("second");
    let groups = fake.groups();
    assert_eq!(groups.len(), 1, "one group per control plane");
    assert!(groups[0].ingress.is_empty(), "{:?}", groups[0].ingress);
}

#[tokio::test]
async fn ssh_opt_in_uses_a_dedicated_group_open_to_the_cidr_and_delete_leaves_nothing_behind() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);
    let mut req = create_request("cp-c", "ssh-1", "npv_ssh1");
    req.ssh_source_cidr = Some("203.0.113.7/32".into());
    let created = aws.create_server(&req).await.expect("create");
    let groups = fake.groups();
    let [g] = groups.as_slice() else {
        panic!("only the dedicated group: {groups:?}")
    };
    assert_eq!(g.name, "levelrail-npv_ssh1-ssh");
    assert_eq!(g.ingress, vec!["tcp 22-22 203.0.113.7/32".to_owned()]);
    assert_eq!(
        g.tags.get("levelrail-provision").map(String::as_str),
        Some("npv_ssh1")
    );
    assert_eq!(fake.instances()[0].groups, vec![g.id.clone()]);

    aws.delete_provision_resources(Some(&created.id), &req.ownership)
        .await
        .expect("delete");
    assert!(fake.groups().is_empty(), "the dedicated group is gone");
    assert!(fake.key_pairs().is_empty(), "the key pair is gone");
    assert_eq!(fake.instances()[0].state, "terminated");
    // The group could only go once the interface was released: the fake refused earlier
    // attempts, or the client waited for the interface to disappear first.
    let log = fake.requests();
    let deleted_at = log
        .iter()
        .position(|r| r.action == "DeleteSecurityGroup" && r.status == Some(200))
        .expect("deleted");
    assert!(
        log[..deleted_at]
            .iter()
            .any(|r| r.action == "DescribeNetworkInterfaces"),
        "waited for the interface"
    );
    assert!(
        log.iter()
            .all(|r| r.error_code.as_deref() != Some("DependencyViolation")),
        "never deleted too early"
    );
}

#[tokio::test]
async fn an_operator_named_subnet_puts_the_instance_and_its_group_in_that_vpc() {
    let fake = start_fake(|_| {}).await;
    let (vpc, subnet) = fake.add_subnet(REGION);
    let mut s = settings(&fake.endpoint());
    s.subnets.insert(REGION.into(), subnet.clone());
    let aws = client_with(s, fast_policy());
    aws.create_server(&create_request("cp-d", "net-1", "npv_net1"))
        .await
        .expect("create");
    assert_eq!(fake.instances()[0].subnet_id, subnet);
    assert_eq!(fake.groups()[0].vpc_id, vpc);
}

#[tokio::test]
async fn an_image_override_is_used_as_given_and_must_be_an_ami_id() {
    let fake = start_fake(|_| {}).await;
    let aws = client(&fake);
    let mut req = create_request("cp-e", "img-1", "npv_img1");
    req.image = Some("ami-0a1b2c3d4e5f60005".into());
    aws.create_server(&req).await.expect("create");
    assert_eq!(fake.instances()[0].image_id, "ami-0a1b2c3d4e5f60005");
    req.image = Some("ubuntu-24.04".into());
    req.ownership.provision_id = "npv_img2".into();
    let err = aws.create_server(&req).await.expect_err("not an AMI id");
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
}

#[tokio::test]
async fn a_create_retried_after_a_lost_answer_adopts_the_same_instance() {
    let fake = start_fake(|_| {}).await;
    // Every RunInstances answer is lost: the SDK retries with the same ClientToken, the
    // fake returns the instance it launched first, and the call finally fails.
    fake.faults()
        .inject(Some("POST"), "/RunInstances", 10, Fault::ProcessThenDrop);
    let req = create_request("cp-f", "crash-1", "npv_crash1");
    let first = client(&fake).create_server(&req).await;
    assert_eq!(
        first.map_err(|e| e.kind).err(),
        Some(ErrorKind::Unavailable)
    );
    let runs: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.action == "RunInstances")
        .collect();
    assert!(runs.len() >= 2, "the SDK retried: {}", runs.len());
    let token = format!("npv_crash1/{}/t3.micro", fake.default_subnets(REGION)[0].1);
    assert!(
        runs.iter()
            .all(|r| r.params.get("ClientToken") == Some(&token)),
        "every retry carries the same token"
    );
    assert_eq!(
        fake.launch_count_by_tag("levelrail-provision", "npv_crash1"),
        1,
        "one launch for every retry"
    );
    // The control plane restarts and retries the provision with a new client.
    fake.faults().clear();
    let adopted = client(&fake).create_server(&req).await.expect("retry");
    assert_eq!(adopted.id, format!("{REGION}/{}", fake.instances()[0].id));
    assert_eq!(
        fake.launch_count_by_tag("levelrail-provision", "npv_crash1"),
        1,
        "no second instance"
    );
}

#[tokio::test]
async fn errors_are_classified_by_their_ec2_codes() {
    let fake = start_fake(|c| c.denied_actions = vec!["RunInstances".into()]).await;
    let aws = client(&fake);
    let err = aws
        .create_server(&create_request("cp-g", "x-1", "npv_denied"))
        .await
        .expect_err("denied");
    assert_eq!(
        (err.kind, err.code.as_str()),
        (ErrorKind::Unauthorized, "UnauthorizedOperation")
    );
    let report = aws.probe().await.expect("probe");
    assert!(!report.can_write, "{}", report.message);
    assert_eq!(report.account, "123456789012");

    let fake = start_fake(|_| {}).await;
    fake.faults()
        .inject(Some("POST"), "/RunInstances", 10, Fault::Capacity);
    let err = client(&fake)
        .create_server(&create_request("cp-g", "x-2", "npv_capacity"))
        .await
        .expect_err("no capacity");
    assert_eq!(
        (err.kind, err.code.as_str()),
        (
            ErrorKind::CapacityUnavailable,
            "InsufficientInstanceCapacity"
        )
    );
    fake.faults().inject(
        Some("POST"),
        "/DescribeRegions",
        1,
        Fault::RateLimited {
            retry_after_secs: 1,
        },
    );
    assert!(
        client(&fake).list_regions().await.is_ok(),
        "a throttled call is retried"
    );
    let missing = client(&fake)
        .get_server("eu-west-1/i-00000000000000001")
        .await
        .expect_err("missing");
    assert_eq!(missing.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn instances_move_from_pending_to_running_and_boot_with_their_user_data() {
    let booted = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = booted.clone();
    let fake = start_fake(move |c| {
        c.boot_hook = Some(std::sync::Arc::new(move |e| {
            seen.lock().expect("lock").push(e)
        }));
    })
    .await;
    let aws = client(&fake);
    let req = create_request("cp-h", "boot-1", "npv_boot1");
    let created = aws.create_server(&req).await.expect("create");
    let mut state = created.state;
    for _ in 0..50 {
        if state == ServerState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        state = aws.get_server(&created.id).await.expect("get").state;
    }
    assert_eq!(state, ServerState::Running);
    let events = booted.lock().expect("lock").clone();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].name.as_str(), events[0].user_data.as_str()),
        ("boot-1", req.user_data.as_str())
    );
}

#[tokio::test]
async fn the_probe_dry_runs_every_action_the_client_needs_and_names_each_missing_one() {
    let fake = start_fake(|_| {}).await;
    let report = client(&fake).probe().await.expect("probe");
    assert!(report.can_write, "{}", report.message);
    assert!(
        fake.instances().is_empty(),
        "the probe launched nothing: {:?}",
        fake.instances()
    );
    let dry: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.params.get("DryRun").is_some_and(|v| v == "true"))
        .map(|r| r.action.clone())
        .collect();
    assert!(
        !report.message.contains("price unavailable"),
        "{}",
        report.message
    );
    for action in [
        "RunInstances",
        "CreateSecurityGroup",
        "AuthorizeSecurityGroupIngress",
        "RevokeSecurityGroupIngress",
        "DeleteSecurityGroup",
        "ImportKeyPair",
        "DeleteKeyPair",
        "CreateTags",
        "TerminateInstances",
        "DescribeInstanceTypes",
        "DescribeInstanceTypeOfferings",
    ] {
        assert!(dry.iter().any(|a| a == action), "{action} dry-run: {dry:?}");
    }

    // A policy without the key-pair and termination actions.
    let fake = start_fake(|c| {
        c.denied_actions = vec![
            "ImportKeyPair".into(),
            "TerminateInstances".into(),
            "DescribeInstanceTypeOfferings".into(),
        ];
    })
    .await;
    let report = client(&fake).probe().await.expect("probe");
    assert!(!report.can_write, "{}", report.message);
    for named in [
        "ec2:ImportKeyPair",
        "ec2:TerminateInstances",
        "ec2:DescribeInstanceTypeOfferings",
    ] {
        assert!(report.message.contains(named), "{}", report.message);
    }
    assert!(
        !report.message.contains("ec2:RunInstances"),
        "{}",
        report.message
    );

    // Without the Price List the credential still provisions; the probe says what is lost.
    let fake = start_fake(|c| c.denied_actions = vec!["GetProducts".into()]).await;
    let report = client(&fake).probe().await.expect("probe");
    assert!(report.can_write, "{}", report.message);
    assert!(
        report.message.contains("price unavailable")
            && report.message.contains("allow pricing:GetProducts"),
        "{}",
        report.message
    );
}
