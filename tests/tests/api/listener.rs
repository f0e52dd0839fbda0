//! The public listener: authentication, CORS, message limits, what is and is not mounted.
use std::io::{Read as _, Write as _};

use crate::harness::{Bearer, TestApp};
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::credential_broker_client::CredentialBrokerClient;
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use tonic::Code;

#[tokio::test]
async fn calls_without_a_valid_token_are_unauthenticated() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let wrong = format!("{}x", &app.token[..app.token.len() - 1]);
    for token in [
        "",
        "not-a-token",
        "lrt_0000000000000000.abc",
        wrong.as_str(),
    ] {
        let mut client = app.credentials_client_with(token).await;
        let err = client
            .list_providers(pb::ListProvidersRequest {})
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated, "token {token:?}");
        let err = client
            .set_credential(pb::SetCredentialRequest {
                provider: pb::Provider::Hetzner as i32,
                credential: Some(Credential::Hetzner(pb::ApiToken {
                    token: "a".repeat(64),
                })),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
    }
    // Nothing was stored by the rejected calls.
    let mut admin = app.credentials_client().await;
    let list = admin
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(list.providers.iter().all(|p| !p.connected));
    app.stop().await;
}

fn preflight(addr: std::net::SocketAddr, origin: &str) -> String {
    preflight_for(
        addr,
        origin,
        "POST",
        "/levelrail.credentials.v1.CredentialsService/ListProviders",
    )
}

fn preflight_for(addr: std::net::SocketAddr, origin: &str, method: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "OPTIONS {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: {method}\r\nAccess-Control-Request-Headers: authorization,content-type,x-grpc-web\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.to_ascii_lowercase()
}

#[tokio::test]
async fn a_preflight_from_a_foreign_origin_gets_no_cors_grant() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let addr = app.addr;
    let (foreign, allowed, rest) = tokio::task::spawn_blocking(move || {
        (
            preflight(addr, "https://evil.example"),
            preflight(addr, "https://console.example.test"),
            preflight_for(
                addr,
                "https://console.example.test",
                "DELETE",
                "/api/v1/nodes/node_1",
            ),
        )
    })
    .await
    .unwrap();
    // The REST routes' methods are granted to the configured origin too.
    assert!(rest.contains("delete"), "REST preflight:\n{rest}");
    assert!(
        !foreign.contains("access-control-allow-origin"),
        "foreign origin granted:\n{foreign}"
    );
    assert!(
        allowed.contains("access-control-allow-origin: https://console.example.test"),
        "configured origin not granted:\n{allowed}"
    );
    assert!(allowed.contains("authorization"));
    app.stop().await;
}

#[tokio::test]
async fn an_oversize_message_is_resource_exhausted() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut client = app.credentials_client().await;
    let err = client
        .set_credential(pb::SetCredentialRequest {
            provider: pb::Provider::Gcp as i32,
            credential: Some(Credential::Gcp(pb::JsonDocument {
                json: "x".repeat(100 * 1024),
                ..Default::default()
            })),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{}", err.message());
    // The server is still healthy afterwards.
    client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test]
async fn the_broker_is_not_mounted_on_the_public_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut broker =
        CredentialBrokerClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));
    let err = broker
        .issue_access(bpb::IssueAccessRequest {
            provider: pb::Provider::Hetzner as i32,
            purpose: "probe".into(),
            fresh: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    app.stop().await;
}

#[tokio::test]
async fn health_answers_without_a_token() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut health = HealthClient::new(app.channel().await);
    let resp = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.status, 1, "SERVING");
    app.stop().await;
}
