//! One contract suite run against every provider client over its fake cloud: the same
//! behaviour is expected from each, whatever its wire format.
use std::sync::Arc;
use std::time::Duration;

use levelrail_clouds::{
    CloudProvider, CreateServer, ErrorKind, PollTarget, Pricing, ProviderId, ServerState,
};

use crate::{
    aws_support as aws, azure_support as azs, digitalocean_support as dos, gcp_support as gcs,
    hetzner_support as hzs,
};

/// What the suite needs from one provider.
struct Subject {
    client: Arc<dyn CloudProvider>,
    region: &'static str,
    request: CreateServer,
    /// How many servers the fake holds for a provision id.
    inventory: Box<dyn Fn(&str) -> usize + Send + Sync>,
    /// Whether the endpoint serves the cloud's price API (moto has no Price List).
    prices: bool,
}

async fn run(s: Subject) {
    let client = s.client.as_ref();
    let provider = client.id();

    let regions = client.list_regions().await.expect("regions");
    assert!(
        regions.iter().any(|r| r.id == s.region),
        "{provider}: region listed"
    );
    let sizes = crate::prices::priced_sizes(client, s.region).await;
    let size = sizes
        .iter()
        .find(|z| z.id == s.request.size)
        .unwrap_or_else(|| panic!("{provider}: size listed"));
    assert!(
        size.vcpus > 0 && size.memory_mb > 0,
        "{provider}: size shape"
    );
    // Every cloud prices its sizes: Hetzner and DigitalOcean in their catalogs, AWS,
    // Azure and GCP through their price APIs (a month of 730 hours; GCP's composed).
    // Without a price API (moto has none) the sizes are listed all the same, each saying
    // why it has no price.
    match (size.pricing.price(), s.prices) {
        (Some(price), true) => {
            let hourly = !matches!(provider, ProviderId::Hetzner | ProviderId::DigitalOcean);
            assert_eq!(
                (
                    price.currency.is_empty(),
                    price.basis.starts_with("730 h"),
                    price.estimate
                ),
                (false, hourly, provider == ProviderId::Gcp),
                "{provider}: {price:?}"
            );
        }
        (None, false) => assert!(
            matches!(&size.pricing, Pricing::Failed(why) if !why.is_empty()),
            "{provider}: {:?}",
            size.pricing
        ),
        (_, expected) => panic!(
            "{provider}: a price expected {expected}, got {:?}",
            size.pricing
        ),
    }

    let created = client.create_server(&s.request).await.expect("create");
    let again = client
        .create_server(&s.request)
        .await
        .expect("create again");
    assert_eq!(
        created.id, again.id,
        "{provider}: create is idempotent by provision id"
    );
    let pid = &s.request.ownership.provision_id;
    assert_eq!((s.inventory)(pid), 1, "{provider}: exactly one server");
    assert_eq!(
        created.provision_id.as_deref(),
        Some(pid.as_str()),
        "{provider}: ownership on the server"
    );

    let mut state = created.state;
    for _ in 0..60 {
        if state == ServerState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        state = client.get_server(&created.id).await.expect("get").state;
    }
    assert_eq!(state, ServerState::Running, "{provider}: reaches running");
    let running = client.get_server(&created.id).await.expect("get");
    assert!(
        running.ipv4.is_some(),
        "{provider}: public address once running"
    );

    // A poll reads it as `get_server` does, in one call of its group.
    let target = PollTarget {
        server_id: created.id.clone(),
        provision_id: pid.clone(),
    };
    let cp = s.request.ownership.control_plane.as_str();
    let polled = client
        .poll_servers(cp, std::slice::from_ref(&target))
        .await
        .expect("poll");
    assert_eq!(polled.len(), 1, "{provider}: the poll finds the server");
    assert_eq!(
        (polled[0].id.as_str(), polled[0].ipv4.as_deref()),
        (created.id.as_str(), running.ipv4.as_deref()),
        "{provider}: the poll reads what get_server reads"
    );
    assert!(client.poll_batch() >= 1);
    if client.poll_batch() > 1 {
        assert!(
            client.poll_group(&created.id).is_some(),
            "{provider}: a batch has a group"
        );
    }

    let listed = client
        .list_servers(&s.request.ownership.control_plane)
        .await
        .expect("list");
    assert!(
        listed.iter().any(|x| x.id == created.id),
        "{provider}: listed by ownership"
    );
    let others = client
        .list_servers("some-other-control-plane")
        .await
        .expect("list");
    assert!(
        others.iter().all(|x| x.id != created.id),
        "{provider}: not listed for others"
    );

    client
        .delete_provision_resources(Some(&created.id), &s.request.ownership)
        .await
        .expect("delete");
    client
        .delete_provision_resources(Some(&created.id), &s.request.ownership)
        .await
        .expect("delete twice is fine");
    for _ in 0..40 {
        if (s.inventory)(pid) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!((s.inventory)(pid), 0, "{provider}: nothing left");
    let gone = client.get_server(&created.id).await;
    assert!(
        matches!(&gone, Err(e) if e.kind == ErrorKind::NotFound)
            || matches!(&gone, Ok(x) if x.state == ServerState::Failed),
        "{provider}: deleted server is gone or going: {gone:?}"
    );
    let polled = client
        .poll_servers(cp, std::slice::from_ref(&target))
        .await
        .expect("poll after the delete");
    assert!(
        polled
            .iter()
            .all(|x| x.id != created.id || x.state == ServerState::Failed),
        "{provider}: a poll does not find a deleted server running: {polled:?}"
    );

    let report = client.probe().await.expect("probe");
    assert!(
        report.can_write,
        "{provider}: the full-access token can write"
    );
}

#[tokio::test]
async fn hetzner_passes_the_provider_conformance_suite() {
    let fake = Arc::new(hzs::start_fake(|c| c.state_step = Duration::from_millis(200)).await);
    let f = fake.clone();
    run(Subject {
        client: Arc::new(hzs::client(&fake, hzs::TOKEN)),
        region: "fsn1",
        request: hzs::create_request("conf-1", "npv_conformance1"),
        prices: true,
        inventory: Box::new(move |pid| {
            f.servers()
                .iter()
                .filter(|s| s.labels.get("levelrail-provision").map(String::as_str) == Some(pid))
                .count()
        }),
    })
    .await;
}

#[tokio::test]
async fn digitalocean_passes_the_provider_conformance_suite() {
    let fake = Arc::new(dos::start_fake(|c| c.state_step = Duration::from_millis(200)).await);
    let f = fake.clone();
    run(Subject {
        client: Arc::new(dos::client(&fake, dos::TOKEN)),
        region: "nyc3",
        request: dos::create_request("npv_conformance1"),
        prices: true,
        inventory: Box::new(move |pid| {
            dos::droplets_per_provision(&f)
                .get(&dos::provision_tag(pid))
                .copied()
                .unwrap_or(0)
        }),
    })
    .await;
}

#[tokio::test]
async fn aws_passes_the_provider_conformance_suite() {
    let fake = Arc::new(aws::start_fake(|_| {}).await);
    let f = fake.clone();
    run(Subject {
        client: Arc::new(aws::client(&fake)),
        region: aws::REGION,
        request: aws::create_request("cp-conformance", "conf-1", "npv_conformance1"),
        prices: true,
        inventory: Box::new(move |pid| {
            f.instances()
                .iter()
                .filter(|i| i.state != "terminated")
                .filter(|i| i.tags.get("levelrail-provision").map(String::as_str) == Some(pid))
                .count()
        }),
    })
    .await;
}

/// The same suite against moto, an independent EC2 implementation (skipped with a note
/// when `moto_server` is not installed, unless `LEVELRAIL_REQUIRE_MOTO=1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_on_moto_passes_the_provider_conformance_suite() {
    let Some(moto) = aws::Moto::start() else {
        return;
    };
    let client = Arc::new(moto.client());
    let mut request = aws::create_request("cp-conformance-moto", "conf-1", "npv_conformance_moto1");
    request.image = Some(aws::MOTO_IMAGE.into());
    let lister = client.clone();
    run(Subject {
        client,
        region: aws::REGION,
        request,
        prices: false,
        inventory: Box::new(move |pid| {
            let listed = tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current()
                    .block_on(lister.list_servers("cp-conformance-moto"))
            })
            .expect("list at moto");
            listed
                .iter()
                .filter(|s| s.provision_id.as_deref() == Some(pid))
                .count()
        }),
    })
    .await;
}

#[tokio::test]
async fn azure_passes_the_provider_conformance_suite() {
    let fake = Arc::new(azs::start_fake(|_| {}).await);
    let f = fake.clone();
    run(Subject {
        client: Arc::new(azs::client(&fake)),
        region: azs::LOCATION,
        request: azs::create_request("conf-1", "npv_conformance1"),
        prices: true,
        inventory: Box::new(move |pid| {
            f.vms()
                .iter()
                .filter(|v| v.tags.get("levelrail-provision").map(String::as_str) == Some(pid))
                .count()
        }),
    })
    .await;
}

#[tokio::test]
async fn gcp_passes_the_provider_conformance_suite() {
    let fake = Arc::new(gcs::start_fake(|_| {}).await);
    let f = fake.clone();
    run(Subject {
        client: Arc::new(gcs::client(&fake)),
        region: gcs::ZONE,
        request: gcs::create_request("conf-1", "npv_conformance1"),
        prices: true,
        inventory: Box::new(move |pid| {
            f.instances()
                .iter()
                .filter(|i| i.labels.get("levelrail-provision").map(String::as_str) == Some(pid))
                .count()
        }),
    })
    .await;
}
