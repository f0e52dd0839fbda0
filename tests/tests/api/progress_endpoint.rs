//! The progress endpoint's request handling (`POST /v1/provision-progress` on the agent
//! listener), which anyone who reaches the listener can call: the bearer is looked for
//! before the body is read, and a body is refused naming what is wrong before any
//! credential is checked against the store.
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::harness::TestApp;

fn client(app: &TestApp) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(app.nodes.ca().cert_pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn url(app: &TestApp) -> String {
    format!(
        "https://127.0.0.1:{}/v1/provision-progress",
        app.agent_addr.port()
    )
}

/// A credential of the right shape for no provision of this control plane.
const UNKNOWN: &str =
    "LRP1.npv_0123456789abcdef0123456789abcdef.cHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3I";

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
async fn without_a_bearer_the_body_is_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let response = client(&app)
        .post(url(&app))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap(Endless { sent: false }))
        .send()
        .await
        .expect("answered without the body");
    assert_eq!(response.status().as_u16(), 401);
    app.stop().await;
}

#[tokio::test]
async fn a_bad_request_is_refused_naming_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let client = client(&app);
    let send = |content_type: &'static str, body: Vec<u8>| {
        client
            .post(url(&app))
            .bearer_auth(UNKNOWN)
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
        // Well formed: only now is the credential looked up, and it belongs to nothing.
        (
            "unknown credential",
            "application/json; charset=utf-8",
            br#"{"step":"docker_ready"}"#.to_vec(),
            401,
            "",
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
