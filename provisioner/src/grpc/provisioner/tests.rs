//! Handler tests: the generated trait methods called with `Request::new(..)`, asserting
//! status codes, the fields named in errors, and the watch stream's contract.
use std::sync::Arc;

use levelrail_proto::credentials::v1::Provider as PbProvider;
use levelrail_proto::provisioner::v1 as pb;
use levelrail_proto::provisioner::v1::provisioner_service_server::ProvisionerService as _;
use tokio_stream::StreamExt as _;
use tonic::{Code, Request};

use super::ProvisionerGrpc;
use crate::app::workflow::tests::harness::{Harness, NAME};
use crate::model::provision::ProvisionId;

fn fixture() -> (Arc<Harness>, ProvisionerGrpc) {
    let h = Arc::new(Harness::new());
    let api = ProvisionerGrpc::new(Arc::clone(&h.provisioner));
    (h, api)
}

fn request(name: &str) -> pb::ProvisionRequest {
    pb::ProvisionRequest {
        provider: PbProvider::Hetzner.into(),
        region: "fsn1".into(),
        size: "cx22".into(),
        name: name.into(),
        ..Default::default()
    }
}

async fn provision(
    api: &ProvisionerGrpc,
    req: pb::ProvisionRequest,
) -> Result<pb::Provision, tonic::Status> {
    let response = api.provision(Request::new(req)).await?;
    Ok(response.into_inner().provision.expect("a provision"))
}

#[tokio::test(start_paused = true)]
async fn provision_answers_creating_and_the_stream_reaches_ready() {
    let (h, api) = fixture();

    let p = provision(&api, request(NAME)).await.expect("provision");
    let stream = api
        .watch_provision(Request::new(pb::WatchProvisionRequest { id: p.id.clone() }))
        .await;
    let id = ProvisionId::parse(&p.id).expect("id");
    let booter = {
        let h = Arc::clone(&h);
        tokio::spawn(async move { h.complete(&id, NAME).await })
    };
    let events: Vec<_> = stream.expect("watch").into_inner().collect().await;
    booter.await.expect("boot");

    assert_eq!(p.status, pb::ProvisionStatus::Creating as i32);
    let last = events
        .last()
        .expect("events")
        .as_ref()
        .expect("ok")
        .provision
        .clone()
        .expect("provision");
    assert_eq!(last.status, pb::ProvisionStatus::Ready as i32);
    assert!(!last.node_id.is_empty());
    assert_eq!(last.role, pb::Role::General as i32);
    assert_eq!(last.stages.len(), 5);
}

#[tokio::test(start_paused = true)]
async fn invalid_fields_are_invalid_argument_naming_the_field() {
    let (_h, api) = fixture();
    let cases: Vec<(pb::ProvisionRequest, &str)> = vec![
        (
            pb::ProvisionRequest {
                region: String::new(),
                ..request(NAME)
            },
            "region",
        ),
        (
            pb::ProvisionRequest {
                region: "mars1".into(),
                ..request(NAME)
            },
            "region",
        ),
        (
            pb::ProvisionRequest {
                size: "cx99".into(),
                ..request(NAME)
            },
            "size",
        ),
        (
            pb::ProvisionRequest {
                name: "Web 1".into(),
                ..request(NAME)
            },
            "name",
        ),
        (
            pb::ProvisionRequest {
                ssh_source_cidr: "everyone".into(),
                ..request(NAME)
            },
            "ssh_source_cidr",
        ),
        (
            pb::ProvisionRequest {
                control_plane_addr: "cp".into(),
                ..request(NAME)
            },
            "control_plane_addr",
        ),
        (
            pb::ProvisionRequest {
                image: "a\nb".into(),
                ..request(NAME)
            },
            "image",
        ),
        (
            pb::ProvisionRequest {
                provider: 0,
                ..request(NAME)
            },
            "provider",
        ),
        (
            pb::ProvisionRequest {
                role: 9,
                ..request(NAME)
            },
            "role",
        ),
    ];
    for (req, field) in cases {
        let status = provision(&api, req).await.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().starts_with(&format!("{field}: ")),
            "{field}: {}",
            status.message()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_taken_name_is_already_exists_and_no_credential_is_failed_precondition() {
    let (_h, api) = fixture();
    provision(&api, request(NAME)).await.expect("first");

    let taken = provision(&api, request(NAME)).await.expect_err("taken");
    let other = pb::ProvisionRequest {
        provider: PbProvider::Digitalocean.into(),
        ..request("web-2")
    };
    let no_credential = provision(&api, other).await.expect_err("no credential");
    let regions = api
        .list_regions(Request::new(pb::ListRegionsRequest {
            provider: PbProvider::Digitalocean.into(),
        }))
        .await
        .expect_err("no credential");

    assert_eq!(taken.code(), Code::AlreadyExists);
    assert_eq!(no_credential.code(), Code::FailedPrecondition);
    assert_eq!(regions.code(), Code::FailedPrecondition);
}

#[tokio::test(start_paused = true)]
async fn regions_and_sizes_carry_names_and_prices() {
    let (_h, api) = fixture();

    let regions = api
        .list_regions(Request::new(pb::ListRegionsRequest {
            provider: PbProvider::Hetzner.into(),
        }))
        .await;
    let sizes = api
        .list_sizes(Request::new(pb::ListSizesRequest {
            provider: PbProvider::Hetzner.into(),
            region: "fsn1".into(),
        }))
        .await;
    let no_region = api
        .list_sizes(Request::new(pb::ListSizesRequest {
            provider: PbProvider::Hetzner.into(),
            region: String::new(),
        }))
        .await;

    assert_eq!(regions.expect("regions").into_inner().regions[0].id, "fsn1");
    let size = sizes.expect("sizes").into_inner().sizes.remove(0);
    assert_eq!(
        (
            size.id.as_str(),
            size.price_monthly.as_str(),
            size.currency.as_str(),
            size.price_basis.as_str(),
            size.price_unavailable.as_str()
        ),
        ("cx22", "4.51", "EUR", "monthly price", "")
    );
    let status = no_region.expect_err("no region");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("region: "),
        "{}",
        status.message()
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_and_malformed_ids_and_finished_cancels_have_their_codes() {
    let (h, api) = fixture();
    let unknown = ProvisionId::generate().to_string();

    let get = api
        .get_provision(Request::new(pb::GetProvisionRequest {
            id: unknown.clone(),
        }))
        .await;
    let watch = api
        .watch_provision(Request::new(pb::WatchProvisionRequest { id: unknown }))
        .await;
    let malformed = api
        .get_provision(Request::new(pb::GetProvisionRequest { id: "npv_x".into() }))
        .await;
    h.fake.fail_next(
        "create_server",
        1,
        levelrail_clouds::ErrorKind::Unauthorized,
        "unauthorized",
    );
    let p = provision(&api, request(NAME)).await.expect("provision");
    h.finish(&ProvisionId::parse(&p.id).expect("id")).await;
    let cancel = api
        .cancel_provision(Request::new(pb::CancelProvisionRequest {
            id: p.id.clone(),
        }))
        .await;
    let listed = api
        .list_provisions(Request::new(pb::ListProvisionsRequest::default()))
        .await;

    assert_eq!(get.expect_err("unknown").code(), Code::NotFound);
    assert_eq!(watch.err().expect("unknown").code(), Code::NotFound);
    assert_eq!(
        malformed.expect_err("malformed").code(),
        Code::InvalidArgument
    );
    assert_eq!(
        cancel.expect_err("finished").code(),
        Code::FailedPrecondition
    );
    let listed = listed.expect("list").into_inner();
    assert_eq!(listed.provisions.len(), 1);
    let failed = &listed.provisions[0];
    assert_eq!(failed.failed_phase, pb::ProvisionStatus::Creating as i32);
    assert_eq!(failed.provider_error_code, "unauthorized");
    assert!(
        failed
            .failure_reason
            .starts_with("could not create the server: "),
        "{}",
        failed.failure_reason
    );
}
