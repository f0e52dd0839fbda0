//! The progress endpoint's request handling (`POST /v1/provision-progress` on the agent
//! listener), which anyone who reaches the listener can call: no body is read unless the
//! bearer is a credential this control plane derived, a body must arrive in time, and a
//! body is refused naming what is wrong before the store is asked about its provision.
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::harness::TestApp;

fn client(app: &TestApp) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(app.nodes.ca().cert_pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn url(app: &TestApp) -> String {
    format!(
        "https://127.0.0.1:{}/v1/provision-progress",
        app.agent_addr.port()
    )
}

/// A credential of the right shape that this control plane never derived.
const FORGED: &str =
    "LRP1.npv_0123456789abcdef0123456789abcdef.cHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3I";

/// A credential this control plane derives (under its sealing key), for a provision that
/// does not exist.
fn derived(app: &TestApp) -> String {
    use levelrail_provisioner::model::provision::ProvisionId;
    use secrecy::ExposeSecret as _;
    let path = app.data_dir.join("provision-seal.key");
    let key = levelrail_provisioner::enroll::sealing_key::load(&path).expect("the sealing key");
    key.progress_credential(&ProvisionId::generate())
        .expose_secret()
        .to_owned()
}

/// A body that sends one byte and then nothing, ever: an answer can only come before it.
struct Endless {
    sent: bool,
}

impl http_body::Body for Endless {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<axum::body::Bytes>, std::io::Error>>> {
        if self.sent {
            return Poll::Pending;
        }
        self.sent = true;
        Poll::Ready(Some(Ok(http_body::Frame::data(
            axum::body::Bytes::from_static(b"{"),
        ))))
    }
}

#[tokio::test]
async fn without_a_credential_it_derived_the_body_is_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let client = client(&app);
    for authorization in [None, Some("Bearer "), Some("Bearer garbage"), Some(FORGED)] {
        let mut request = client
            .post(url(&app))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap(Endless { sent: false }));
        if let Some(value) = authorization {
            let value = if value.starts_with("Bearer") {
                value.to_owned()
            } else {
                format!("Bearer {value}")
            };
            request = request.header("authorization", value);
        }
        let response = request.send().await.expect("answered without the body");
        assert_eq!(response.status().as_u16(), 401, "{authorization:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let response = client(&app)
        .post(url(&app))
        .bearer_auth(derived(&app))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap(Endless { sent: false }))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status().as_u16(), 408);
    app.stop().await;
}

#[tokio::test]
async fn a_bad_request_is_refused_naming_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let client = client(&app);
    let credential = derived(&app);
    let send = |content_type: &'static str, body: Vec<u8>| {
        client
            .post(url(&app))
            .bearer_auth(&credential)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let cases: [(&str, &str, Vec<u8>, u16, &str); 6] = [
        (
            "not JSON",
            "text/plain",
            br#"{"step":"docker_ready"}"#.to_vec(),
            415,
            "Content-Type",
        ),
        (
            "malformed",
            "application/json",
            b"{\"step\":".to_vec(),
            400,
            "body: is not valid JSON",
        ),
        (
            "unknown field",
            "application/json",
            br#"{"step":"docker_ready","xyzzy":"xyzzy"}"#.to_vec(),
            400,
            "body: is not a progress report",
        ),
        (
            "unknown step",
            "application/json",
            br#"{"step":"xyzzy"}"#.to_vec(),
            400,
            "step: must be one of",
        ),
        (
            "too large",
            "application/json",
            vec![b' '; 64 * 1024],
            413,
            "body:",
        ),
        // Well formed: only now is the store asked, and the provision does not exist.
        (
            "no such provision",
            "application/json; charset=utf-8",
            br#"{"step":"docker_ready"}"#.to_vec(),
            401,
            "progress credential unknown",
        ),
    ];
    for (what, content_type, body, status, says) in cases {
        let response = send(content_type, body).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{what}");
        let text = response.text().await.unwrap();
        assert!(text.contains(says), "{what}: {text}");
        assert!(!text.contains("xyzzy"), "{what}: the body is not repeated");
    }
    app.stop().await;
}
