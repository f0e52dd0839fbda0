//! Placement against the fake EC2: a zone (or subnet) without capacity for the type, or not
//! offering it, sends the launch on to the default VPC's next default subnet, each with its
//! own `ClientToken`; the instance exists exactly once, a retry adopts it whichever subnet
//! it went to, and the undo removes it.
use levelrail_clouds::{CloudProvider as _, CreateServer, ErrorKind, ProviderError, ServerInfo};
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::aws::{AwsRequest, FakeAwsHandle, LaunchRefusal};

use crate::aws_support::{REGION, client, create_request, start_fake};

/// Every `RunInstances` received: (subnet, client token, error code).
fn launches(fake: &FakeAwsHandle) -> Vec<(String, String, Option<String>)> {
    let param = |r: &AwsRequest, k: &str| r.params.get(k).cloned().unwrap_or_default();
    fake.requests()
        .iter()
        .filter(|r| r.action == "RunInstances" && !r.params.contains_key("DryRun"))
        .map(|r| {
            (
                param(r, "NetworkInterface.1.SubnetId"),
                param(r, "ClientToken"),
                r.error_code.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn no_capacity_in_one_zone_moves_the_launch_to_the_next_and_the_server_exists_exactly_once() {
    let fake = start_fake(|_| {}).await;
    let subnets = fake.default_subnets(REGION);
    assert!(subnets.len() >= 3, "a default subnet per zone: {subnets:?}");
    let (zone_a, subnet_a) = &subnets[0];
    let subnet_b = &subnets[1].1;
    fake.refuse_launches(zone_a, Some(LaunchRefusal::InsufficientCapacity));
    let aws = client(&fake);
    let req = create_request("cp-place", "place-1", "npv_place1");

    let created = aws.create_server(&req).await.expect("create");

    let instances = fake.instances();
    let [i] = instances.as_slice() else {
        panic!("one instance: {instances:?}")
    };
    assert_eq!(created.id, format!("{REGION}/{}", i.id));
    assert_eq!(&i.subnet_id, subnet_b, "the next zone's subnet");
    assert_eq!(i.client_token, format!("npv_place1/{subnet_b}/t3.micro"));
    let tried = launches(&fake);
    assert!(
        tried
            .iter()
            .filter(|l| l.0 == *subnet_a)
            .all(|l| l.1 == format!("npv_place1/{subnet_a}/t3.micro")
                && l.2.as_deref() == Some("InsufficientInstanceCapacity")),
        "zone a refused, with its own token: {tried:?}"
    );
    assert_eq!(tried.last().map(|l| &l.0), Some(subnet_b), "{tried:?}");

    // A retry of the provision (the capacity is back in zone a) adopts the instance.
    fake.refuse_launches(zone_a, None);
    let again = aws.create_server(&req).await.expect("retry");
    assert_eq!(again.id, created.id);
    assert_eq!(
        fake.launch_count_by_tag("levelrail-provision", "npv_place1"),
        1,
        "exactly one server"
    );

    // The undo finds it by id and by tag, and leaves nothing of the provision behind.
    aws.delete_provision_resources(Some(&created.id), &req.ownership)
        .await
        .expect("undo");
    let state = fake.instances()[0].state.clone();
    assert!(
        matches!(state.as_str(), "shutting-down" | "terminated"),
        "{state}"
    );
    assert!(fake.key_pairs().is_empty(), "{:?}", fake.key_pairs());
}

#[tokio::test]
async fn a_subnet_that_does_not_offer_the_type_and_a_zone_without_capacity_are_both_passed_over() {
    let fake = start_fake(|_| {}).await;
    let subnets = fake.default_subnets(REGION);
    fake.refuse_launches(&subnets[0].1, Some(LaunchRefusal::Unsupported));
    fake.refuse_launches(&subnets[1].0, Some(LaunchRefusal::InsufficientCapacity));

    client(&fake)
        .create_server(&create_request("cp-place", "place-2", "npv_place2"))
        .await
        .expect("create");

    let instances = fake.instances();
    assert_eq!(instances.len(), 1, "{instances:?}");
    assert_eq!(instances[0].subnet_id, subnets[2].1, "the third zone");
    let codes: Vec<Option<String>> = launches(&fake).into_iter().map(|l| l.2).collect();
    assert!(codes.contains(&Some("Unsupported".into())), "{codes:?}");
    assert!(
        codes.contains(&Some("InsufficientInstanceCapacity".into())),
        "{codes:?}"
    );
}

#[tokio::test]
async fn every_zone_out_of_capacity_fails_naming_the_capacity_error_and_the_undo_cleans_up() {
    let fake = start_fake(|_| {}).await;
    let subnets = fake.default_subnets(REGION);
    for (zone, _) in &subnets {
        fake.refuse_launches(zone, Some(LaunchRefusal::InsufficientCapacity));
    }
    let aws = client(&fake);
    let req = create_request("cp-place", "place-3", "npv_place3");

    let err = aws
        .create_server(&req)
        .await
        .expect_err("no zone has capacity");

    assert_eq!(
        (err.kind, err.code.as_str()),
        (
            ErrorKind::CapacityUnavailable,
            "InsufficientInstanceCapacity"
        )
    );
    for (zone, _) in &subnets {
        assert!(err.message.contains(zone.as_str()), "{}", err.message);
    }
    assert!(fake.instances().is_empty(), "{:?}", fake.instances());
    let tried: std::collections::BTreeSet<String> =
        launches(&fake).into_iter().map(|l| l.0).collect();
    assert_eq!(tried.len(), subnets.len(), "each subnet tried: {tried:?}");

    aws.delete_provision_resources(None, &req.ownership)
        .await
        .expect("undo without a server");
    assert!(fake.key_pairs().is_empty(), "{:?}", fake.key_pairs());
}

/// Zone a has no capacity and every answer from zone b is lost on the way back: the
/// create of `provision` fails, after zone b launched. Returns the request and the subnets.
async fn lose_a_launch_after_a_fallback(
    fake: &FakeAwsHandle,
    provision: &str,
) -> (
    CreateServer,
    Vec<(String, String)>,
    Result<ServerInfo, ProviderError>,
) {
    let subnets = fake.default_subnets(REGION);
    fake.refuse_launches(&subnets[0].0, Some(LaunchRefusal::InsufficientCapacity));
    fake.faults().inject(
        Some("POST"),
        &format!("/RunInstances/{}", subnets[1].1),
        10,
        Fault::ProcessThenDrop,
    );
    let req = create_request("cp-place", provision, provision);
    let lost = client(fake).create_server(&req).await;
    (req, subnets, lost)
}

#[tokio::test]
async fn a_lost_answer_after_a_fallback_is_adopted_by_the_retry_not_duplicated() {
    let fake = start_fake(|_| {}).await;

    let (req, subnets, lost) = lose_a_launch_after_a_fallback(&fake, "npv_place4").await;

    let (zone_a, subnet_b) = (&subnets[0].0, &subnets[1].1);
    assert_eq!(
        lost.map_err(|e| e.kind).err(),
        Some(ErrorKind::Unavailable),
        "a lost answer is not a capacity refusal"
    );
    let tried = launches(&fake);
    assert!(
        tried.iter().all(|l| l.0 != subnets[2].1),
        "no launch in zone c after the lost answer: {tried:?}"
    );
    assert_eq!(
        fake.launch_count_by_tag("levelrail-provision", "npv_place4"),
        1,
        "the SDK's retries in zone b returned the same instance"
    );

    // Capacity is back in zone a, and the control plane retries the provision.
    fake.refuse_launches(zone_a, None);
    fake.faults().clear();
    let adopted = client(&fake).create_server(&req).await.expect("retry");

    let instances = fake.instances();
    let [i] = instances.as_slice() else {
        panic!("one instance: {instances:?}")
    };
    assert_eq!(adopted.id, format!("{REGION}/{}", i.id));
    assert_eq!(&i.subnet_id, subnet_b);
    assert_eq!(
        fake.launch_count_by_tag("levelrail-provision", "npv_place4"),
        1,
        "no second server in zone a"
    );
}

#[tokio::test]
async fn a_launch_the_retry_could_not_see_yet_wins_and_the_newer_instance_is_terminated() {
    let fake = start_fake(|_| {}).await;
    let (req, subnets, lost) = lose_a_launch_after_a_fallback(&fake, "npv_place5").await;
    lost.expect_err("every answer from zone b was lost");
    let zone_a = &subnets[0].0;
    let first = fake.instances()[0].id.clone();

    // The retry's lookup does not see that instance yet, and zone a has capacity again.
    fake.faults().clear();
    fake.refuse_launches(zone_a, None);
    fake.stale_describes(1);
    let kept = client(&fake).create_server(&req).await.expect("retry");

    assert_eq!(
        kept.id,
        format!("{REGION}/{first}"),
        "the earlier launch wins"
    );
    let instances = fake.instances();
    assert_eq!(
        instances.len(),
        2,
        "the retry launched in zone a: {instances:?}"
    );
    let newer = instances.iter().find(|i| i.id != first).expect("newer");
    assert_eq!(newer.subnet_id, subnets[0].1);
    assert!(
        matches!(newer.state.as_str(), "shutting-down" | "terminated"),
        "the newer instance is terminated: {newer:?}"
    );
    let live = instances
        .iter()
        .filter(|i| matches!(i.state.as_str(), "pending" | "running"))
        .count();
    assert_eq!(live, 1, "one server for the provision");
}
