//! Handler tests: the generated trait methods called with `Request::new(..)`, asserting
//! status codes, reason metadata and that no message carries the token.
mod orphans;
use std::sync::Arc;

use levelrail_proto::nodes::v1 as pb;
use levelrail_proto::nodes::v1::enrollment_service_server::EnrollmentService as _;
use levelrail_proto::nodes::v1::nodes_service_server::NodesService as _;
use tonic::{Code, Request, Status};

use super::{EnrollmentGrpc, NodesGrpc, PeerCertificates, REASON_METADATA_KEY};
use crate::app::Nodes;
use crate::test_support::{self, first_cert_der};

struct Fixture {
    nodes: Arc<Nodes>,
    api: NodesGrpc,
    agent: EnrollmentGrpc,
}

fn fixture() -> Fixture {
    let (nodes, _clock) = test_support::nodes();
    Fixture {
        api: NodesGrpc::new(Arc::clone(&nodes)),
        agent: EnrollmentGrpc::new(Arc::clone(&nodes)),
        nodes,
    }
}

async fn create_token(f: &Fixture, req: pb::CreateJoinTokenRequest) -> pb::CreateJoinTokenResponse {
    f.api
        .create_join_token(Request::new(req))
        .await
        .expect("create token")
        .into_inner()
}

fn enroll_request(token: &str, name: &str) -> pb::EnrollRequest {
    pb::EnrollRequest {
        join_token: token.to_owned(),
        node_name: name.to_owned(),
        addresses: vec!["10.0.0.5".into()],
        agent_version: "1.0.0".into(),
        csr_pem: test_support::csr(),
    }
}

async fn enroll(f: &Fixture, token: &str, name: &str) -> Result<pb::EnrollResponse, Status> {
    f.agent
        .enroll(Request::new(enroll_request(token, name)))
        .await
        .map(|r| r.into_inner())
}

fn heartbeat_request(certificate_pem: Option<&str>) -> Request<pb::HeartbeatRequest> {
    let mut request = Request::new(pb::HeartbeatRequest {
        addresses: vec!["192.0.2.9".into()],
        agent_version: "1.1.0".into(),
        docker_version: "27.5.1".into(),
    });
    if let Some(pem) = certificate_pem {
        request
            .extensions_mut()
            .insert(PeerCertificates(vec![first_cert_der(pem)]));
    }
    request
}

fn reason(status: &Status) -> Option<&str> {
    status
        .metadata()
        .get(REASON_METADATA_KEY)
        .and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn create_join_token_returns_the_full_token_and_the_ca_fingerprint() {
    let f = fixture();

    let resp = create_token(&f, pb::CreateJoinTokenRequest::default()).await;

    assert!(resp.token_id.starts_with("njt_"));
    assert_eq!(resp.ca_fingerprint, f.nodes.ca().fingerprint());
    assert_eq!(
        resp.token.split('.').collect::<Vec<_>>()[..3],
        ["LR1", &resp.ca_fingerprint, &resp.token_id]
    );
    let expires = resp.expires_at.expect("expires_at");
    assert_eq!(
        expires.seconds - test_support::START.unix_timestamp(),
        15 * 60
    );
}

#[tokio::test]
async fn create_join_token_refuses_a_ttl_over_24_hours_and_a_bad_name() {
    let f = fixture();
    let long = pb::CreateJoinTokenRequest {
        ttl_seconds: 24 * 3600 + 1,
        ..Default::default()
    };
    let bad_name = pb::CreateJoinTokenRequest {
        node_name: "Web_1".into(),
        ..Default::default()
    };

    let long = f
        .api
        .create_join_token(Request::new(long))
        .await
        .expect_err("too long");
    let bad_name = f
        .api
        .create_join_token(Request::new(bad_name))
        .await
        .expect_err("bad name");

    assert_eq!(long.code(), Code::InvalidArgument);
    assert!(
        long.message().starts_with("ttl_seconds"),
        "{}",
        long.message()
    );
    assert_eq!(bad_name.code(), Code::InvalidArgument);
    assert!(
        bad_name.message().starts_with("node_name"),
        "{}",
        bad_name.message()
    );
}

#[tokio::test]
async fn enroll_returns_a_node_certificate_the_ca_and_the_heartbeat_interval() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;

    let resp = enroll(&f, &token, "web-1").await.expect("enroll");

    assert!(resp.node_id.starts_with("node_"));
    assert_eq!(resp.ca_pem, f.nodes.ca().cert_pem());
    assert_eq!(resp.heartbeat_interval_seconds, 30);
    let der = first_cert_der(&resp.certificate_pem);
    let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("x509");
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok());
    assert_eq!(cn, Some(resp.node_id.as_str()));
    let listed = f
        .api
        .list_nodes(Request::new(pb::ListNodesRequest::default()))
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.nodes.len(), 1);
    assert_eq!(
        listed.nodes[0].workload_kinds,
        vec![pb::WorkloadKind::Apps as i32]
    );
}

#[tokio::test]
async fn replaying_a_used_token_is_unauthenticated_with_reason_used_and_no_token_in_the_message() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;
    enroll(&f, &token, "web-1").await.expect("first enroll");

    let status = enroll(&f, &token, "web-2").await.expect_err("replay");

    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(reason(&status), Some("used"));
    assert_eq!(status.message(), "join token already used");
    let secret = token.rsplit('.').next().expect("secret");
    assert!(!format!("{status:?}").contains(secret));
}

#[tokio::test]
async fn a_token_for_another_control_plane_is_refused_with_reason_fingerprint() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;
    let foreign = token.replacen(f.nodes.ca().fingerprint(), &"ee".repeat(32), 1);

    let status = enroll(&f, &foreign, "web-1").await.expect_err("foreign CA");

    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(reason(&status), Some("fingerprint"));
}

#[tokio::test]
async fn an_invalid_node_name_or_malformed_token_is_an_invalid_argument() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;

    let bad_name = enroll(&f, &token, "'; DROP TABLE nodes;--")
        .await
        .expect_err("bad name");
    let bad_token = enroll(&f, "LR1.garbage", "web-1")
        .await
        .expect_err("bad token");

    assert_eq!(bad_name.code(), Code::InvalidArgument);
    assert!(
        bad_name.message().starts_with("node_name"),
        "{}",
        bad_name.message()
    );
    assert_eq!(bad_token.code(), Code::InvalidArgument);
    assert!(
        !bad_token.message().contains("garbage"),
        "{}",
        bad_token.message()
    );
}

#[tokio::test]
async fn heartbeat_with_the_issued_certificate_moves_last_seen() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;
    let enrolled = enroll(&f, &token, "web-1").await.expect("enroll");

    let resp = f
        .agent
        .heartbeat(heartbeat_request(Some(&enrolled.certificate_pem)))
        .await
        .expect("heartbeat");

    assert!(resp.into_inner().server_time.is_some());
    let node = f
        .api
        .get_node(Request::new(pb::GetNodeRequest {
            id: enrolled.node_id,
        }))
        .await
        .expect("get");
    let node = node.into_inner().node.expect("node");
    assert_eq!(node.addresses, vec!["192.0.2.9".to_owned()]);
    assert_eq!(node.docker_version, "27.5.1");
    assert_eq!(node.agent_version, "1.1.0");
    assert_eq!(node.status, pb::NodeStatus::Online as i32);
}

#[tokio::test]
async fn heartbeat_without_a_client_certificate_is_unauthenticated() {
    let f = fixture();

    let status = f
        .agent
        .heartbeat(heartbeat_request(None))
        .await
        .expect_err("no certificate");

    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(reason(&status), Some("client_certificate"));
}

#[tokio::test]
async fn heartbeat_with_a_certificate_that_names_no_node_is_unauthenticated() {
    let f = fixture();
    let server = f
        .nodes
        .ca()
        .issue_server_cert(&["localhost".into()])
        .expect("server cert");

    let status = f
        .agent
        .heartbeat(heartbeat_request(Some(&server.chain_pem)))
        .await
        .expect_err("server cert");

    assert_eq!(status.code(), Code::Unauthenticated);
}

#[tokio::test]
async fn heartbeat_of_a_deleted_node_is_permission_denied() {
    let f = fixture();
    let token = create_token(&f, pb::CreateJoinTokenRequest::default())
        .await
        .token;
    let enrolled = enroll(&f, &token, "web-1").await.expect("enroll");
    let delete = pb::DeleteNodeRequest {
        id: enrolled.node_id.clone(),
        destroy_server: false,
    };
    f.api
        .delete_node(Request::new(delete))
        .await
        .expect("delete");

    let status = f
        .agent
        .heartbeat(heartbeat_request(Some(&enrolled.certificate_pem)))
        .await
        .expect_err("deleted");

    assert_eq!(status.code(), Code::PermissionDenied);
}

#[tokio::test]
async fn unknown_nodes_are_not_found_and_malformed_ids_invalid() {
    let f = fixture();
    let unknown = pb::GetNodeRequest {
        id: format!("node_{}", "0".repeat(32)),
    };

    let not_found = f
        .api
        .get_node(Request::new(unknown.clone()))
        .await
        .expect_err("unknown");
    let deleted = f
        .api
        .delete_node(Request::new(pb::DeleteNodeRequest {
            id: unknown.id,
            destroy_server: false,
        }))
        .await;
    let malformed = f
        .api
        .get_node(Request::new(pb::GetNodeRequest { id: "x".into() }))
        .await;

    assert_eq!(not_found.code(), Code::NotFound);
    assert_eq!(deleted.expect_err("unknown").code(), Code::NotFound);
    assert_eq!(
        malformed.expect_err("malformed").code(),
        Code::InvalidArgument
    );
}

#[tokio::test]
async fn a_revoked_token_cannot_enroll_and_unknown_tokens_cannot_be_revoked() {
    let f = fixture();
    let created = create_token(&f, pb::CreateJoinTokenRequest::default()).await;
    let revoke = pb::RevokeJoinTokenRequest {
        token_id: created.token_id.clone(),
    };
    f.api
        .revoke_join_token(Request::new(revoke))
        .await
        .expect("revoke");

    let status = enroll(&f, &created.token, "web-1")
        .await
        .expect_err("revoked");
    let unknown = pb::RevokeJoinTokenRequest {
        token_id: "njt_0000000000000000".into(),
    };
    let unknown = f
        .api
        .revoke_join_token(Request::new(unknown))
        .await
        .expect_err("unknown");

    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(reason(&status), Some("revoked"));
    assert_eq!(unknown.code(), Code::NotFound);
}

#[tokio::test]
async fn report_progress_refuses_a_join_token_and_a_bad_step() {
    let f = fixture();
    let bound = pb::CreateJoinTokenRequest {
        provision_id: "prv_1".into(),
        ..Default::default()
    };
    let bound = create_token(&f, bound).await.token;
    let report = |credential: &str, step: &str| {
        Request::new(pb::ReportProgressRequest {
            credential: credential.to_owned(),
            step: step.to_owned(),
            error: String::new(),
        })
    };

    let by_token = f
        .agent
        .report_progress(report(&bound, "docker_ready"))
        .await
        .expect_err("a join token only enrolls");
    let bad_step = f
        .agent
        .report_progress(report(&bound, "reboot"))
        .await
        .expect_err("bad step");

    let progress = f.nodes.install_progress("prv_1").await.expect("progress");
    assert!(progress.is_empty());
    // This fixture's registry takes no progress reports at all; the control plane's does
    // and refuses the join token as unauthenticated (tested end to end).
    assert!(
        matches!(
            by_token.code(),
            Code::FailedPrecondition | Code::Unauthenticated
        ),
        "{by_token:?}"
    );
    assert_eq!(bad_step.code(), Code::InvalidArgument);
}
