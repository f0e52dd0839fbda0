//! Tests of the `Nodes` state struct on the memory store with a manual clock.
mod logs;
mod teardown;

use secrecy::ExposeSecret as _;
use time::Duration;

use super::*;
use crate::app::AuthFailure;
use crate::enroll::ca::fingerprint_der;
use crate::model::WorkloadKind;
use crate::model::{HeartbeatReport, InstallStep};
use crate::test_support::{self, START, csr, first_cert_der};

fn name(s: &str) -> NodeName {
    NodeName::parse(s).expect("valid name")
}

async fn token(
    nodes: &Nodes,
    bound: Option<&str>,
    provision: Option<&str>,
    role: Role,
) -> (JoinTokenInfo, String) {
    let (info, token) = nodes
        .create_join_token(None, bound.map(name), provision.map(str::to_owned), role)
        .await
        .expect("create token");
    (info, token.expose_secret().to_owned())
}

async fn enroll(nodes: &Nodes, token: &str, node_name: &str) -> Result<(Node, String), NodesError> {
    nodes
        .enroll(
            token,
            name(node_name),
            vec!["10.0.0.1".into()],
            "1.0.0".into(),
            &csr(),
        )
        .await
}

fn assert_unauthenticated(result: Result<impl fmt::Debug, NodesError>, want: AuthFailure) {
    match result {
        Err(NodesError::Unauthenticated { reason }) => assert_eq!(reason, want),
        other => panic!("expected unauthenticated {want:?}, got {other:?}"),
    }
}

fn identity(node: &Node, certificate_pem: &str) -> NodeIdentity {
    NodeIdentity {
        node_id: node.id.clone(),
        cert_fingerprint: fingerprint_der(&first_cert_der(certificate_pem)),
    }
}

#[tokio::test]
async fn a_join_token_lasts_15_minutes_by_default_and_only_its_hash_is_stored() {
    let (nodes, _clock) = test_support::nodes();

    let (info, token) = token(&nodes, None, None, Role::General).await;

    assert_eq!(info.expires_at - info.created_at, DEFAULT_JOIN_TOKEN_TTL);
    assert_eq!(info.ca_fingerprint, nodes.ca().fingerprint());
    let stored = nodes
        .store
        .get_join_token(&info.id)
        .await
        .expect("get")
        .expect("stored");
    let parsed = crate::model::ParsedJoinToken::parse(&token).expect("parses");
    assert_eq!(&stored.secret_sha256, parsed.secret_sha256());
}

#[tokio::test]
async fn a_ttl_may_be_24_hours_but_not_more_and_not_zero() {
    let (nodes, _clock) = test_support::nodes();
    let create = |ttl| nodes.create_join_token(Some(ttl), None, None, Role::General);

    let day = create(MAX_JOIN_TOKEN_TTL).await.expect("24 h is allowed").0;
    let hour = create(PROVISION_JOIN_TOKEN_TTL)
        .await
        .expect("60 min is allowed")
        .0;
    let too_long = create(MAX_JOIN_TOKEN_TTL + Duration::SECOND).await;
    let zero = create(Duration::ZERO).await;

    assert_eq!(day.expires_at - day.created_at, Duration::hours(24));
    assert_eq!(hour.expires_at - hour.created_at, Duration::minutes(60));
    for result in [too_long, zero] {
        assert!(
            matches!(
                result,
                Err(NodesError::InvalidArgument {
                    field: "ttl_seconds",
                    ..
                })
            ),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn enrolling_creates_an_app_node_whose_certificate_names_it() {
    let (nodes, _clock) = test_support::nodes();
    let (_, token) = token(&nodes, None, None, Role::General).await;

    let (node, cert) = enroll(&nodes, &token, "web-1").await.expect("enroll");

    assert_eq!(node.name, name("web-1"));
    assert_eq!(node.workload_kinds, vec![WorkloadKind::Apps]);
    assert_eq!(node.enrolled_at, START);
    let der = first_cert_der(&cert);
    assert_eq!(node.cert_fingerprint, fingerprint_der(&der));
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("x509");
    let cn = parsed
        .subject()
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok());
    assert_eq!(cn, Some(node.id.as_str()));
    assert_eq!(hex::encode(parsed.raw_serial()), node.cert_serial);
}

#[tokio::test]
async fn a_build_provision_token_enrolls_a_build_node_of_that_provision() {
    let (nodes, _clock) = test_support::nodes();
    let (_, token) = token(&nodes, Some("builder-1"), Some("prv_7"), Role::Build).await;

    let (node, _) = enroll(&nodes, &token, "builder-1").await.expect("enroll");

    assert_eq!(node.workload_kinds, vec![WorkloadKind::Builds]);
    assert_eq!(node.provision_id.as_deref(), Some("prv_7"));
}

#[tokio::test]
async fn a_token_is_redeemable_until_its_ttl_and_expired_from_then_on() {
    let (nodes, clock) = test_support::nodes();
    let (_, early) = token(&nodes, None, None, Role::General).await;
    let (_, late) = token(&nodes, None, None, Role::General).await;

    clock.advance(DEFAULT_JOIN_TOKEN_TTL - Duration::SECOND);
    enroll(&nodes, &early, "early")
        .await
        .expect("one second before expiry");
    clock.advance(Duration::SECOND);

    assert_unauthenticated(enroll(&nodes, &late, "late").await, AuthFailure::Expired);
}

#[tokio::test]
async fn a_bound_token_refuses_another_name_and_still_enrolls_its_own() {
    let (nodes, _clock) = test_support::nodes();
    let (_, token) = token(&nodes, Some("db-1"), None, Role::General).await;

    assert_unauthenticated(enroll(&nodes, &token, "db-2").await, AuthFailure::WrongName);

    enroll(&nodes, &token, "db-1")
        .await
        .expect("the bound name enrolls");
}

#[tokio::test]
async fn a_taken_name_is_already_exists_and_leaves_the_token_unused() {
    let (nodes, _clock) = test_support::nodes();
    let (_, first) = token(&nodes, None, None, Role::General).await;
    let (second_info, second) = token(&nodes, None, None, Role::General).await;
    enroll(&nodes, &first, "web-1").await.expect("first");

    let taken = enroll(&nodes, &second, "web-1").await;

    assert!(
        matches!(taken, Err(NodesError::AlreadyExists { what: "node", .. })),
        "{taken:?}"
    );
    let stored = nodes
        .store
        .get_join_token(&second_info.id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(stored.used_at, None);
    enroll(&nodes, &second, "web-2")
        .await
        .expect("the token still works");
}

#[tokio::test]
async fn an_invalid_csr_is_refused_before_the_token_is_used() {
    let (nodes, _clock) = test_support::nodes();
    let (_, token) = token(&nodes, None, None, Role::General).await;

    let bad = nodes
        .enroll(&token, name("web-1"), vec![], "1.0.0".into(), "not a csr")
        .await;

    assert!(
        matches!(
            bad,
            Err(NodesError::InvalidArgument {
                field: "csr_pem",
                ..
            })
        ),
        "{bad:?}"
    );
    enroll(&nodes, &token, "web-1")
        .await
        .expect("the token is still unused");
}

#[tokio::test]
async fn a_heartbeat_with_another_certificate_of_the_node_id_is_denied() {
    let (nodes, clock) = test_support::nodes();
    let (_, token) = token(&nodes, None, None, Role::General).await;
    let (node, cert) = enroll(&nodes, &token, "web-1").await.expect("enroll");
    let forged = nodes
        .ca()
        .sign_node_csr(&csr(), node.id.as_str())
        .expect("second certificate");
    clock.advance(Duration::seconds(30));

    let denied = nodes
        .heartbeat(&identity(&node, &forged), report("1.0.0", ""))
        .await;
    let ok = nodes
        .heartbeat(&identity(&node, &cert), report("1.0.1", "26.1.5"))
        .await;

    assert!(
        matches!(denied, Err(NodesError::PermissionDenied(_))),
        "{denied:?}"
    );
    assert_eq!(ok.expect("heartbeat"), START + Duration::seconds(30));
    let seen = nodes.get_node(&node.id).await.expect("node");
    assert_eq!(
        (
            seen.last_seen_at,
            seen.agent_version.as_str(),
            seen.docker_version.as_deref()
        ),
        (START + Duration::seconds(30), "1.0.1", Some("26.1.5"))
    );
    let bad = nodes
        .heartbeat(&identity(&node, &cert), report("1.0.1", "26\n1"))
        .await;
    assert!(
        matches!(&bad, Err(NodesError::InvalidArgument { field, .. }) if *field == "docker_version"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn a_join_token_or_a_foreign_credential_is_refused_at_the_progress_endpoint() {
    let (nodes, _clock) = test_support::nodes();
    let key = crate::model::provision::SealingKey::generate();
    let store = Arc::new(crate::store::MemoryStore::new());
    let nodes = Arc::try_unwrap(nodes)
        .expect("sole owner")
        .with_progress_authority(ProgressAuthority::new(
            crate::model::provision::SealingKey::from_bytes([1; 32]),
            store,
        ));
    let (_, join_token) = token(&nodes, None, Some("prv_a"), Role::General).await;
    let unknown = key.progress_credential(&crate::model::provision::ProvisionId::generate());

    let by_token = nodes
        .report_progress(&join_token, InstallStep::DockerReady, None)
        .await;
    let by_foreign = nodes
        .report_progress(unknown.expose_secret(), InstallStep::DockerReady, None)
        .await;

    assert_unauthenticated(by_token, AuthFailure::ProgressUnknown);
    assert_unauthenticated(by_foreign, AuthFailure::ProgressUnknown);
    assert!(
        nodes
            .install_progress("prv_a")
            .await
            .expect("progress")
            .is_empty()
    );
}

#[tokio::test]
async fn enrolling_again_with_the_same_token_and_key_returns_the_same_identity() {
    let (nodes, clock) = test_support::nodes();
    let (_, token) = token(&nodes, None, None, Role::General).await;
    let request = csr();
    let enroll_with = |csr: String, node_name: &'static str| {
        let (nodes, token) = (&nodes, token.clone());
        async move {
            nodes
                .enroll(&token, name(node_name), vec![], "1.0.0".into(), &csr)
                .await
        }
    };

    let (first, first_cert) = enroll_with(request.clone(), "web-1").await.expect("enroll");
    let (again, again_cert) = enroll_with(request.clone(), "web-1").await.expect("replay");
    let other_key = enroll_with(csr(), "web-1").await;
    let other_name = enroll_with(request.clone(), "web-2").await;
    clock.advance(DEFAULT_JOIN_TOKEN_TTL);
    let too_late = enroll_with(request, "web-1").await;

    assert_eq!((again.id, again_cert), (first.id, first_cert));
    assert_eq!(nodes.list_nodes().await.expect("nodes").len(), 1);
    assert_unauthenticated(other_key, AuthFailure::Used);
    assert_unauthenticated(other_name, AuthFailure::Used);
    assert!(
        too_late.is_err(),
        "a replay after the token's life is refused"
    );
}

#[tokio::test]
async fn a_provision_failure_revokes_its_live_tokens() {
    let (nodes, _clock) = test_support::nodes();
    let (_, token) = token(&nodes, None, Some("prv_fail"), Role::General).await;

    assert_eq!(
        nodes
            .revoke_join_tokens_for_provision("prv_fail")
            .await
            .expect("revoke"),
        1
    );

    assert_unauthenticated(enroll(&nodes, &token, "web-1").await, AuthFailure::Revoked);
}

#[tokio::test]
async fn rejected_tokens_are_logged_by_id_and_reason_never_by_secret() {
    // Arrange
    let (nodes, clock) = test_support::nodes();
    let (used_info, used) = token(&nodes, None, None, Role::General).await;
    let (_, bound) = token(&nodes, Some("bound"), None, Role::General).await;
    let (revoked_info, revoked) = token(&nodes, None, None, Role::General).await;
    let (_, expiring) = token(&nodes, None, None, Role::General).await;
    enroll(&nodes, &used, "first").await.expect("enroll");
    nodes
        .revoke_join_token(&revoked_info.id)
        .await
        .expect("revoke");
    let wrong_secret = format!("{}{}", &used[..used.len() - 4], "AAAA");
    let foreign = used.replacen(nodes.ca().fingerprint(), &"ee".repeat(32), 1);
    let tokens = [&used, &bound, &revoked, &expiring, &wrong_secret, &foreign];
    let (logs, _guard) = logs::capture();
    // Act
    for (i, t) in tokens.iter().enumerate() {
        if i == 3 {
            clock.advance(Duration::hours(1));
        }
        let _ = enroll(&nodes, t, "other").await;
    }
    let _ = enroll(&nodes, "LR1.not.a.token", "other").await;
    // Assert
    let text = logs.text();
    for reason in [
        "used",
        "wrong_name",
        "revoked",
        "expired",
        "unknown",
        "fingerprint",
        "malformed",
    ] {
        assert!(
            text.contains(&format!("reason={reason}")),
            "no {reason} in {text}"
        );
    }
    assert!(text.contains(used_info.id.as_str()), "{text}");
    for t in tokens {
        let secret = t.rsplit('.').next().expect("secret");
        assert!(!text.contains(secret), "a secret reached the logs: {text}");
    }
}

fn report(agent_version: &str, docker_version: &str) -> HeartbeatReport {
    HeartbeatReport {
        addresses: vec![],
        agent_version: agent_version.into(),
        docker_version: Some(docker_version.into()),
    }
}

#[tokio::test]
async fn nodes_are_listed_a_page_at_a_time_by_name() {
    let (nodes, _clock) = test_support::nodes();
    for n in ["node-c", "node-a", "node-e", "node-b", "node-d"] {
        let (_, t) = token(&nodes, None, None, Role::General).await;
        enroll(&nodes, &t, n).await.expect("enroll");
    }
    let (first, next) = nodes
        .list_nodes_page(2, "", &NodeFilter::default())
        .await
        .expect("first page");
    let names: Vec<&str> = first.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node-a", "node-b"]);
    assert_eq!(next, "node-b");
    let (second, next) = nodes
        .list_nodes_page(2, &next, &NodeFilter::default())
        .await
        .expect("second page");
    assert_eq!(second.len(), 2);
    let (last, next) = nodes
        .list_nodes_page(2, &next, &NodeFilter::default())
        .await
        .expect("last page");
    assert_eq!(
        last.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["node-e"]
    );
    assert_eq!(next, "", "the last page names a next one");
    let (all, next) = nodes
        .list_nodes_page(0, "", &NodeFilter::default())
        .await
        .expect("default size");
    assert_eq!((all.len(), next.as_str()), (5, ""));
    assert!(matches!(
        nodes
            .list_nodes_page(1_001, "", &NodeFilter::default())
            .await,
        Err(NodesError::InvalidArgument {
            field: "page_size",
            ..
        })
    ));
    assert!(matches!(
        nodes
            .list_nodes_page(2, "Not A Name!", &NodeFilter::default())
            .await,
        Err(NodesError::InvalidArgument {
            field: "page_token",
            ..
        })
    ));
}
