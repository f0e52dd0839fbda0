//! Capacity fallback: a provision that names alternatives moves on to the next region/size
//! choice when the provider has no capacity, cleans up after the failed attempt, records
//! which choice it used and why each earlier one was rejected; alternatives the catalog
//! does not offer are skipped or refused naming their field.
use super::harness::{Harness, NAME, input};
use crate::model::provision::{PlacementOutcome, ProvisionError, ProvisionInput, ProvisionStatus};

fn with_fallbacks(regions: &[&str], sizes: &[&str]) -> ProvisionInput {
    ProvisionInput {
        fallback_regions: regions.iter().map(|r| (*r).to_owned()).collect(),
        fallback_sizes: sizes.iter().map(|s| (*s).to_owned()).collect(),
        ..input(NAME)
    }
}

fn outcomes(p: &crate::model::provision::Provision) -> Vec<(String, String, PlacementOutcome)> {
    p.placements
        .iter()
        .map(|c| (c.region.clone(), c.size.clone(), c.outcome))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn no_capacity_in_the_first_region_moves_on_to_the_next_and_records_both() {
    let h = Harness::new();
    h.fake.set_full_regions(&["fsn1"]);

    let p = h
        .provisioner
        .provision(with_fallbacks(&["nbg1"], &[]))
        .await
        .expect("provision");
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(ready.status, ProvisionStatus::Ready, "{ready:?}");
    assert_eq!(
        h.fake.placed(p.id.as_str()),
        Some(("nbg1".into(), "cx22".into()))
    );
    assert_eq!(
        (ready.region.as_str(), ready.size.as_str()),
        ("nbg1", "cx22")
    );
    assert_eq!(
        outcomes(&ready),
        [
            ("fsn1".into(), "cx22".into(), PlacementOutcome::Rejected),
            ("nbg1".into(), "cx22".into(), PlacementOutcome::InUse),
        ]
    );
    let rejected = &ready.placements[0];
    assert_eq!(rejected.code.as_deref(), Some("resource_unavailable"));
    assert_eq!(
        rejected.reason.as_deref(),
        Some("capacity unavailable in fsn1 (resource_unavailable)")
    );
    assert_eq!(h.fake.created(p.id.as_str()), 1);
    assert_eq!(
        h.fake.calls("delete_server"),
        1,
        "the failed attempt's resources were not cleaned up before the next choice"
    );
}

#[tokio::test(start_paused = true)]
async fn sizes_are_tried_in_a_region_before_the_next_region_and_unoffered_pairs_are_skipped() {
    let h = Harness::new();
    h.fake.set_full_regions(&["fsn1"]);

    let p = h
        .provisioner
        .provision(with_fallbacks(&["nbg1"], &["cx32"]))
        .await
        .expect("provision");

    // cx32 is not offered in fsn1: that pair is skipped.
    assert_eq!(
        outcomes(&p),
        [
            ("fsn1".into(), "cx22".into(), PlacementOutcome::Pending),
            ("nbg1".into(), "cx22".into(), PlacementOutcome::Pending),
            ("nbg1".into(), "cx32".into(), PlacementOutcome::Pending),
        ]
    );
    let ready = h.complete(&p.id, NAME).await;
    assert_eq!(
        (ready.region.as_str(), ready.size.as_str()),
        ("nbg1", "cx22")
    );
}

#[tokio::test(start_paused = true)]
async fn when_every_choice_is_out_of_capacity_the_provision_fails_naming_them_and_cleans_up() {
    let h = Harness::new();
    h.fake.set_full_regions(&["fsn1", "nbg1"]);

    let p = h
        .provisioner
        .provision(with_fallbacks(&["nbg1"], &[]))
        .await
        .expect("provision");
    let failed = h.finish(&p.id).await;

    h.assert_clean_slate(&failed).await;
    let reason = failed.failure_reason.clone().unwrap_or_default();
    assert_eq!(
        reason,
        "could not create the server: capacity unavailable in nbg1 (resource_unavailable); \
         every choice was out of capacity: fsn1/cx22, nbg1/cx22"
    );
    assert!(
        failed
            .placements
            .iter()
            .all(|c| c.outcome == PlacementOutcome::Rejected)
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_alternative_region_or_an_unoffered_size_is_refused_naming_its_field() {
    let h = Harness::new();

    let region = h
        .provisioner
        .provision(with_fallbacks(&["nbg1", "atlantis"], &[]))
        .await;
    let size = h
        .provisioner
        .provision(with_fallbacks(&[], &["cx999"]))
        .await;
    let too_many = h
        .provisioner
        .provision(with_fallbacks(&["a", "b", "c", "d", "e"], &[]))
        .await;

    match region {
        Err(ProvisionError::InvalidArgument { field, message }) => {
            assert_eq!(field, "fallback_regions");
            assert!(message.starts_with("entry 2: atlantis"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            size,
            Err(ProvisionError::InvalidArgument {
                field: "fallback_sizes",
                ..
            })
        ),
        "{size:?}"
    );
    assert!(
        matches!(
            too_many,
            Err(ProvisionError::InvalidArgument {
                field: "fallback_regions",
                ..
            })
        ),
        "{too_many:?}"
    );
    assert_eq!(h.fake.calls("create_server"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancel_while_the_first_choice_is_tried_creates_nothing_in_the_next() {
    let h = Harness::new();
    h.fake.set_full_regions(&["fsn1"]);
    h.fake.set_create_delay(std::time::Duration::from_secs(20));
    let p = h
        .provisioner
        .provision(with_fallbacks(&["nbg1"], &[]))
        .await
        .expect("provision");
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;

    h.provisioner.cancel_provision(&p.id).await.expect("cancel");
    let failed = h.finish(&p.id).await;

    assert_eq!(
        failed.failure_reason.as_deref(),
        Some("cancelled by operator")
    );
    assert_eq!(
        h.fake.calls("create_server"),
        1,
        "a create was tried after the cancel"
    );
    assert_eq!(h.fake.created(p.id.as_str()), 0);
    h.assert_clean_slate(&failed).await;
}

#[tokio::test(start_paused = true)]
async fn an_alternative_region_where_no_size_asked_for_is_offered_is_refused() {
    let h = Harness::new();
    let input = ProvisionInput {
        region: "nbg1".into(),
        size: "cx32".into(),
        fallback_regions: vec!["fsn1".into()],
        ..input(NAME)
    };

    let refused = h.provisioner.provision(input).await;

    match refused {
        Err(ProvisionError::InvalidArgument { field, message }) => {
            assert_eq!(field, "fallback_regions");
            assert!(message.contains("fsn1"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
