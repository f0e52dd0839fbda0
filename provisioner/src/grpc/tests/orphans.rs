//! Orphan RPC tests: the generated trait methods called with `Request::new(..)` on a bench
//! whose fake cloud holds a labelled server of an unknown provision.
use std::sync::Arc;

use levelrail_proto::nodes::v1 as pb;
use levelrail_proto::nodes::v1::nodes_service_server::NodesService as _;
use tonic::{Code, Request};

use crate::app::workflow::tests::harness::{CONTROL_PLANE, Harness};
use crate::grpc::NodesGrpc;
use crate::model::provision::ProvisionId;

/// A bench with one pending orphan (`stray-1`, server of an unknown provision) and the
/// handlers; the orphan's id and the planted provision id.
async fn fixture() -> (Harness, NodesGrpc, String, ProvisionId) {
    let h = Harness::new();
    let provision = ProvisionId::generate();
    h.fake
        .plant_server(CONTROL_PLANE, provision.as_str(), "stray-1");
    h.provisioner.workflow().sweeper().sweep().await;
    let api = NodesGrpc::new(Arc::clone(&h.nodes)).with_orphans(h.provisioner.orphans());
    let listed = list(&api).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0].id.clone();
    (h, api, id, provision)
}

async fn list(api: &NodesGrpc) -> Vec<pb::Orphan> {
    api.list_orphans(Request::new(pb::ListOrphansRequest {}))
        .await
        .expect("list")
        .into_inner()
        .orphans
}

async fn adopt(api: &NodesGrpc, id: &str) -> Result<pb::AdoptOrphanResponse, tonic::Status> {
    let req = pb::AdoptOrphanRequest { id: id.into() };
    api.adopt_orphan(Request::new(req))
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(start_paused = true)]
async fn list_orphans_shows_a_labelled_server_of_an_unknown_provision() {
    let (_h, api, _id, provision) = fixture().await;

    let listed = list(&api).await;

    let o = &listed[0];
    assert_eq!(o.provision_id, provision.as_str());
    assert_eq!(o.node_name, "stray-1");
    assert!(!o.server_id.is_empty());
    assert_eq!(o.reason(), pb::OrphanReason::UnknownProvision);
    assert_eq!(o.state(), pb::OrphanState::Pending);
    assert!(o.first_seen.is_some());
}

#[tokio::test(start_paused = true)]
async fn adopt_orphan_answers_a_bound_token_and_the_agents_env_file_once() {
    let (h, api, id, provision) = fixture().await;

    let adopted = adopt(&api, &id).await.expect("adopt");
    let again = adopt(&api, &id).await.expect_err("adopted twice");

    assert_eq!(
        adopted.orphan.as_ref().map(|o| o.state()),
        Some(pb::OrphanState::Adopted)
    );
    assert!(adopted.token.starts_with("LR1."), "not a join token");
    assert_eq!(
        adopted.env_file,
        format!(
            "APP_CONTROL_PLANE_ADDR=cp.example.com:9443\nAPP_JOIN_TOKEN={}\nAPP_NODE_NAME=stray-1\n",
            adopted.token
        )
    );
    assert_eq!(adopted.env_file_path, "/etc/levelrail/agent.env");
    assert_eq!(
        adopted.command,
        "levelrail-agent --env-file /etc/levelrail/agent.env"
    );
    assert_eq!(again.code(), Code::FailedPrecondition, "{again:?}");
    // The token enrolls the server under its name, and the sweeper leaves it alone.
    let name = crate::model::NodeName::parse("stray-1").expect("name");
    let csr = crate::test_support::csr();
    let enrolled = h
        .nodes
        .enroll(&adopted.token, name, vec![], "1.0.0".into(), &csr)
        .await;
    assert!(enrolled.is_ok(), "{enrolled:?}");
    h.provisioner.workflow().sweeper().sweep().await;
    assert_eq!(h.fake.inventory(provision.as_str()).0, 1);
}

#[tokio::test(start_paused = true)]
async fn delete_orphan_deletes_the_server_now_and_reports_it() {
    let (h, api, id, provision) = fixture().await;

    let req = pb::DeleteOrphanRequest { id: id.clone() };
    let deleted = api
        .delete_orphan(Request::new(req))
        .await
        .expect("delete")
        .into_inner();

    assert!(deleted.deleted);
    assert_eq!(
        deleted.orphan.map(|o| o.state()),
        Some(pb::OrphanState::Deleted)
    );
    assert_eq!(
        h.fake.inventory(provision.as_str()).0,
        0,
        "the server is still there"
    );
    let adopted = adopt(&api, &id)
        .await
        .expect_err("a deleted orphan was adopted");
    assert_eq!(adopted.code(), Code::FailedPrecondition);
}

#[tokio::test(start_paused = true)]
async fn orphan_ids_are_validated_and_unknown_ones_are_not_found() {
    let (_h, api, _id, _) = fixture().await;

    let bad = adopt(&api, "npv_123").await.expect_err("bad id");
    let unknown = adopt(&api, crate::model::OrphanId::generate().as_str())
        .await
        .expect_err("unknown id");

    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("id"), "{bad:?}");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
}

#[tokio::test]
async fn orphan_rpcs_fail_their_precondition_without_an_inventory() {
    let (nodes, _clock) = crate::test_support::nodes();
    let api = NodesGrpc::new(nodes);

    let status = api
        .list_orphans(Request::new(pb::ListOrphansRequest {}))
        .await
        .expect_err("no inventory");

    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test(start_paused = true)]
async fn an_adopted_orphan_cannot_be_deleted_and_its_server_stays() {
    let (h, api, id, provision) = fixture().await;
    adopt(&api, &id).await.expect("adopt");

    let refused = api
        .delete_orphan(Request::new(pb::DeleteOrphanRequest { id: id.clone() }))
        .await
        .expect_err("an adopted orphan was deleted");

    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains("adopted"), "{refused:?}");
    assert_eq!(
        h.fake.inventory(provision.as_str()).0,
        1,
        "the server is gone"
    );
}
