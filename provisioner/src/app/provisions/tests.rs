//! Tests of the `Provisioner`'s own operations: paging, lookups, the catalog check and the
//! credential precondition (the workflow has its own tests).
use crate::app::workflow::tests::harness::{Harness, input};
use crate::model::provision::{ProvisionError, ProvisionId, ProvisionInput};
use levelrail_types::ProviderId;

#[tokio::test(start_paused = true)]
async fn provisions_are_listed_newest_first_in_pages() {
    let h = Harness::new();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(h.provision(&format!("node-{i}")).await.id);
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    let first = h.provisioner.list_provisions(2, "").await.expect("page 1");
    let second = h
        .provisioner
        .list_provisions(2, &first.next_page_token)
        .await
        .expect("page 2");
    let third = h
        .provisioner
        .list_provisions(2, &second.next_page_token)
        .await
        .expect("page 3");

    let listed: Vec<_> = [&first, &second, &third]
        .iter()
        .flat_map(|p| p.provisions.iter().map(|p| p.id.clone()))
        .collect();
    ids.reverse();
    assert_eq!(listed, ids, "not newest first, or a provision is missing");
    assert!(
        third.next_page_token.is_empty(),
        "the last page has a next token"
    );
    let bad = h.provisioner.list_provisions(2, "garbage!").await;
    assert!(
        matches!(
            bad,
            Err(ProvisionError::InvalidArgument {
                field: "page_token",
                ..
            })
        ),
        "{bad:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_provision_is_not_found() {
    let h = Harness::new();
    let id = ProvisionId::generate();

    assert!(matches!(
        h.provisioner.get_provision(&id).await,
        Err(ProvisionError::NotFound(_))
    ));
    assert!(matches!(
        h.provisioner.watch_provision(&id).await,
        Err(ProvisionError::NotFound(_))
    ));
    assert!(matches!(
        h.provisioner.cancel_provision(&id).await,
        Err(ProvisionError::NotFound(_))
    ));
    assert_eq!(h.events.watched(), 0, "a failed watch left a channel");
}

#[tokio::test(start_paused = true)]
async fn a_region_or_size_outside_the_catalog_is_refused_before_anything_is_created() {
    let h = Harness::new();

    let region = h
        .provisioner
        .provision(ProvisionInput {
            region: "hel1".into(),
            ..input("web-1")
        })
        .await;
    let size = h
        .provisioner
        .provision(ProvisionInput {
            size: "cx99".into(),
            ..input("web-1")
        })
        .await;

    assert!(
        matches!(
            region,
            Err(ProvisionError::InvalidArgument {
                field: "region",
                ..
            })
        ),
        "{region:?}"
    );
    assert!(
        matches!(
            size,
            Err(ProvisionError::InvalidArgument { field: "size", .. })
        ),
        "{size:?}"
    );
    assert_eq!(h.fake.calls("create_server"), 0);
    assert!(
        h.provisioner
            .list_provisions(0, "")
            .await
            .expect("list")
            .provisions
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn a_provider_without_a_credential_is_a_failed_precondition() {
    let h = Harness::new();
    let other = ProvisionInput {
        provider: Some(ProviderId::DigitalOcean),
        ..input("web-1")
    };

    let provision = h.provisioner.provision(other).await;
    let regions = h
        .provisioner
        .list_regions(Some(ProviderId::DigitalOcean))
        .await;
    let unsupported = h.provisioner.list_regions(Some(ProviderId::Aws)).await;

    assert!(
        matches!(provision, Err(ProvisionError::FailedPrecondition(_))),
        "{provision:?}"
    );
    assert!(
        matches!(regions, Err(ProvisionError::FailedPrecondition(_))),
        "{regions:?}"
    );
    assert!(
        matches!(unsupported, Err(ProvisionError::FailedPrecondition(_))),
        "{unsupported:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_catalog_is_served_from_the_cache() {
    let h = Harness::new();

    for _ in 0..3 {
        h.provisioner
            .list_regions(Some(ProviderId::Hetzner))
            .await
            .expect("regions");
        h.provisioner
            .list_sizes(Some(ProviderId::Hetzner), "fsn1")
            .await
            .expect("sizes");
    }

    assert_eq!(
        (h.fake.calls("list_regions"), h.fake.calls("list_sizes")),
        (1, 1)
    );
    let unknown = h
        .provisioner
        .list_sizes(Some(ProviderId::Hetzner), "mars1")
        .await;
    assert!(
        matches!(
            unknown,
            Err(ProvisionError::InvalidArgument {
                field: "region",
                ..
            })
        ),
        "{unknown:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_provision_beyond_the_in_flight_limit_is_refused_at_once_not_queued() {
    let tuning = crate::app::WorkflowTuning {
        max_in_flight: 1,
        ..Default::default()
    };
    let h = Harness::with_tuning(None, tuning);
    let first = h.provision("node-1").await;

    let refused = h.provisioner.provision(input("node-2")).await;
    let ready = h.complete(&first.id, "node-1").await;
    h.settle().await;
    let after = h.provisioner.provision(input("node-2")).await;

    assert!(
        matches!(&refused, Err(ProvisionError::ResourceExhausted(m)) if m.contains("--max-provisions-in-flight")),
        "{refused:?}"
    );
    assert_eq!(
        ready.status,
        crate::model::provision::ProvisionStatus::Ready
    );
    assert!(
        after.is_ok(),
        "the limit frees up as provisions finish: {after:?}"
    );
}
