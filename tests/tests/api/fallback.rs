//! Capacity fallback end to end, on every provider: the demo clouds are told that the first
//! region (GCP: zone) is full, so a server create there fails with the provider's real
//! capacity error (Hetzner 412 `resource_unavailable`, DigitalOcean's 422 "currently
//! unavailable for new Droplets", EC2 `InsufficientInstanceCapacity` in every zone, ARM
//! `AllocationFailed`, Compute `ZONE_RESOURCE_POOL_EXHAUSTED`). A provision naming a
//! fallback region reaches `ready` there, its placements show the first choice rejected
//! with the provider's code, and the provider lists exactly one server of it. When every
//! choice is full the provision fails naming them, and nothing of it is left behind.
use std::time::Duration;

use levelrail_clouds::{ProviderId, ServerInfo};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;

use crate::harness::{Bearer, TestApp, test_config};

/// One provider's case: where it is full, where it falls back to, and what it answers.
struct Case {
    provider: Provider,
    id: ProviderId,
    full: &'static str,
    fallback: &'static str,
    size: &'static str,
    /// The provider's error code of the rejection.
    code: &'static str,
    prefix: &'static str,
}

/// A control plane whose demo clouds have no capacity in `full`.
async fn demo_app(tmp: &std::path::Path, full: &[&str]) -> TestApp {
    let mut cfg = test_config(&tmp.join("data"));
    cfg.demo = true;
    cfg.demo_full_regions = full.iter().map(|r| (*r).to_owned()).collect();
    TestApp::start(cfg).await.expect("control plane starts")
}

/// Starts a provision of `case.size` in `regions` (the first, then the fallbacks); its id.
async fn provision(app: &TestApp, case: &Case, regions: &[&str], name: &str) -> String {
    app.start_provision(ppb::ProvisionRequest {
        provider: case.provider as i32,
        region: regions[0].into(),
        fallback_regions: regions[1..].iter().map(|r| (*r).to_owned()).collect(),
        size: case.size.into(),
        name: name.into(),
        ..Default::default()
    })
    .await
}

/// The servers of provision `id` the provider lists (EC2's terminating ones left out).
async fn servers_of(app: &TestApp, provider: ProviderId, id: &str) -> Vec<ServerInfo> {
    let control_plane = std::fs::read_to_string(app.data_dir.join("control-plane.id")).unwrap();
    let (cloud, _) = app
        .registry
        .client(provider, "test inspection")
        .await
        .expect("client");
    cloud
        .list_servers(control_plane.trim())
        .await
        .expect("list")
        .into_iter()
        .filter(|s| s.provision_id.as_deref() == Some(id))
        .filter(|s| !matches!(s.provider_state.as_str(), "shutting-down" | "terminated"))
        .collect()
}

fn outcome(p: &ppb::Placement) -> ppb::PlacementOutcome {
    ppb::PlacementOutcome::try_from(p.outcome).unwrap_or_default()
}

/// A provision falling back from the full region reaches ready in the next one.
async fn falls_back(case: Case) {
    let tmp = tempfile::tempdir().unwrap();
    let app = demo_app(tmp.path(), &[case.full]).await;
    let mut client =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));
    let name = format!("{}-fallback", case.prefix);
    let id = provision(&app, &case, &[case.full, case.fallback], &name).await;
    let done =
        crate::harness::wait_finished(&mut client, &id, &name, Duration::from_secs(150)).await;
    assert_eq!(
        ppb::ProvisionStatus::try_from(done.status),
        Ok(ppb::ProvisionStatus::Ready),
        "{name}: {done:?}"
    );
    assert_eq!(
        (done.region.as_str(), done.size.as_str()),
        (case.fallback, case.size),
        "{name}"
    );
    let [first, second] = done.placements.as_slice() else {
        panic!("{name}: two placements expected: {:?}", done.placements);
    };
    assert_eq!(
        (first.region.as_str(), outcome(first)),
        (case.full, ppb::PlacementOutcome::Rejected),
        "{name}: {first:?}"
    );
    assert_eq!(first.provider_error_code, case.code, "{name}: {first:?}");
    assert!(!first.reason.is_empty(), "{name}: {first:?}");
    assert_eq!(
        (second.region.as_str(), outcome(second)),
        (case.fallback, ppb::PlacementOutcome::InUse),
        "{name}: {second:?}"
    );
    let servers = servers_of(&app, case.id, &id).await;
    assert_eq!(servers.len(), 1, "{name}: {servers:?}");
    // EC2 ids are `region/i-…` and Compute's `zone/name`: the server is in the fallback.
    if matches!(case.id, ProviderId::Aws | ProviderId::Gcp) {
        let at = format!("{}/", case.fallback);
        assert!(servers[0].id.starts_with(&at), "{name}: {servers:?}");
    }
    app.stop().await;
}

const HETZNER: Case = Case {
    provider: Provider::Hetzner,
    id: ProviderId::Hetzner,
    full: "fsn1",
    fallback: "nbg1",
    size: "cx22",
    code: "resource_unavailable",
    prefix: "hz",
};

const DIGITALOCEAN: Case = Case {
    provider: Provider::Digitalocean,
    id: ProviderId::DigitalOcean,
    full: "nyc1",
    fallback: "nyc3",
    size: "s-1vcpu-1gb",
    code: "unprocessable_entity",
    prefix: "do",
};

const AWS: Case = Case {
    provider: Provider::Aws,
    id: ProviderId::Aws,
    full: "us-east-1",
    fallback: "us-west-2",
    size: "t3.small",
    code: "InsufficientInstanceCapacity",
    prefix: "aws",
};

const AZURE: Case = Case {
    provider: Provider::Azure,
    id: ProviderId::Azure,
    full: "westeurope",
    fallback: "northeurope",
    size: "Standard_B2s",
    code: "AllocationFailed",
    prefix: "az",
};

const GCP: Case = Case {
    provider: Provider::Gcp,
    id: ProviderId::Gcp,
    full: "us-central1-a",
    fallback: "us-central1-b",
    size: "e2-small",
    code: "ZONE_RESOURCE_POOL_EXHAUSTED",
    prefix: "gcp",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hetzner_falls_back_from_a_full_location_to_the_next_one() {
    falls_back(HETZNER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digitalocean_falls_back_from_a_region_unavailable_for_new_droplets() {
    falls_back(DIGITALOCEAN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_falls_back_when_every_zone_of_the_region_lacks_capacity() {
    falls_back(AWS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_falls_back_when_the_allocation_fails_in_the_location() {
    falls_back(AZURE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_falls_back_when_the_zone_resource_pool_is_exhausted() {
    falls_back(GCP).await;
}

/// Every choice full: the provision fails naming them, and nothing of it is left.
async fn every_choice_full(case: Case) {
    let tmp = tempfile::tempdir().unwrap();
    let app = demo_app(tmp.path(), &[case.full, case.fallback]).await;
    let mut client =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));
    let name = format!("{}-all-full", case.prefix);
    let id = provision(&app, &case, &[case.full, case.fallback], &name).await;
    let done =
        crate::harness::wait_finished(&mut client, &id, &name, Duration::from_secs(150)).await;
    assert_eq!(
        ppb::ProvisionStatus::try_from(done.status),
        Ok(ppb::ProvisionStatus::Failed),
        "{name}: {done:?}"
    );
    let reason = &done.failure_reason;
    for choice in [case.full, case.fallback] {
        assert!(
            reason.contains(&format!("{choice}/{}", case.size)),
            "{name}: {reason}"
        );
    }
    assert!(!reason.contains("cleanup incomplete"), "{name}: {reason}");
    assert!(
        done.placements
            .iter()
            .all(|p| outcome(p) == ppb::PlacementOutcome::Rejected
                && p.provider_error_code == case.code),
        "{name}: {:?}",
        done.placements
    );
    let left = servers_of(&app, case.id, &id).await;
    assert!(left.is_empty(), "{name}: servers left: {left:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_fails_naming_every_choice_when_all_are_full_and_leaves_no_vm() {
    every_choice_full(AZURE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hetzner_fails_naming_every_choice_when_all_are_full_and_leaves_nothing() {
    every_choice_full(HETZNER).await;
}
