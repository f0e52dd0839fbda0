//! The public listener checks the API token from a request's headers before it reads a byte
//! of the body: an unauthenticated caller holding its streams open with one byte each is
//! answered at once, and cannot delay an authenticated call.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use levelrail::listener::{CallGuard, ConnectionLimits, assemble, serve_within};
use levelrail_credentials::app::api_token::{ApiTokenVerifier, mint};
use levelrail_credentials::grpc::auth::BearerAuth;
use levelrail_types::ApiScope;
use secrecy::ExposeSecret as _;
use tokio::net::TcpListener;

const PATH: &str = "/levelrail.test.v1.Probe/Call";
const HEALTH: &str = "/grpc.health.v1.Health/Check";
const WATCH: &str = "/levelrail.test.v1.Probe/WatchSomething";
const SLOW_STREAMS: usize = 600;

/// A request body: one frame, then the end or (`ends` false) silence forever.
struct TestBody {
    first: Option<Bytes>,
    ends: bool,
}

impl http_body::Body for TestBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.first.take() {
            Some(frame) => Poll::Ready(Some(Ok(Frame::data(frame)))),
            None if self.ends => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

/// A body that stalls after its first byte.
fn stalled() -> TestBody {
    TestBody {
        first: Some(Bytes::from_static(b"\0")),
        ends: false,
    }
}

/// A whole body: an empty gRPC message (its 5-byte frame header).
fn grpc_empty() -> TestBody {
    TestBody {
        first: Some(Bytes::from_static(&[0, 0, 0, 0, 0])),
        ends: true,
    }
}

/// A public listener whose one Levelrail method counts its calls, behind `auth`; its
/// address, the count, and a valid admin token.
async fn listening(max_concurrent: usize) -> (SocketAddr, Arc<AtomicUsize>, String) {
    let (addr, calls, token, _) = listening_with(max_concurrent, ApiScope::Admin, None).await;
    (addr, calls, token)
}

/// [`listening`], with a token of `scope` expiring at `expires_at`.
async fn listening_with(
    max_concurrent: usize,
    scope: ApiScope,
    expires_at: Option<time::OffsetDateTime>,
) -> (SocketAddr, Arc<AtomicUsize>, String, ApiTokenVerifier) {
    let verifier = ApiTokenVerifier::default();
    let minted = mint("test", scope, expires_at);
    verifier.insert(&minted.record);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let ok = || async {
        (
            [("content-type", "application/grpc"), ("grpc-status", "0")],
            "",
        )
    };
    let grpc = axum::Router::new()
        .route(
            PATH,
            axum::routing::post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                ok()
            }),
        )
        .route(HEALTH, axum::routing::post(ok))
        .route(
            WATCH,
            axum::routing::post(|| async {
                // One message, then silence: a watch whose provision does not change.
                use futures::StreamExt as _;
                let first = futures::stream::once(async {
                    Ok::<_, Infallible>(Bytes::from_static(&[0, 0, 0, 0, 0]))
                });
                (
                    [("content-type", "application/grpc")],
                    axum::body::Body::from_stream(first.chain(futures::stream::pending())),
                )
            }),
        );
    let router = assemble(
        grpc,
        None,
        &[],
        max_concurrent,
        CallGuard {
            auth: Some(BearerAuth::new(verifier.clone())),
            ..CallGuard::default()
        },
        levelrail::rest::PROVISIONER_SERVICES,
    )
    .expect("router");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, rx) = tokio::sync::watch::channel(false);
    std::mem::forget(stop);
    tokio::spawn(serve_within(
        listener,
        router,
        None,
        rx,
        ConnectionLimits::default(),
    ));
    (
        addr,
        calls,
        minted.token.expose_secret().to_owned(),
        verifier,
    )
}

/// An HTTP/2 connection to `addr`.
async fn h2(addr: SocketAddr) -> hyper::client::conn::http2::SendRequest<TestBody> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("HTTP/2");
    tokio::spawn(conn);
    sender
}

fn request(addr: SocketAddr, token: Option<&str>, body: TestBody) -> http::Request<TestBody> {
    let mut req = http::Request::post(format!("http://{addr}{PATH}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    req.body(body).expect("request")
}

/// A complete authenticated call on a new connection, answered within 5 s.
async fn whole_call(addr: SocketAddr, token: &str) -> http::Response<hyper::body::Incoming> {
    let mut sender = h2(addr).await;
    let call = sender.send_request(request(addr, Some(token), grpc_empty()));
    answered(call).await
}

/// The answer to `call`, which must come within 5 s.
async fn answered(
    call: impl std::future::Future<Output = hyper::Result<http::Response<hyper::body::Incoming>>>,
) -> http::Response<hyper::body::Incoming> {
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("answered at once, neither held up nor queued")
        .expect("an answer")
}

/// The grpc-status of an answer (in its headers: every answer here is trailers-only).
fn grpc_status<T>(resp: &http::Response<T>) -> String {
    resp.headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_call_is_answered_before_its_body_arrives() {
    let (addr, calls, _) = listening(512).await;
    let mut sender = h2(addr).await;

    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        sender.send_request(request(addr, None, stalled())),
    )
    .await
    .expect("answered while the body is still open")
    .expect("an answer");

    assert_eq!(grpc_status(&answer), "16", "UNAUTHENTICATED");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let wrong = sender.send_request(request(addr, Some("lrt_0000000000000000.wrong"), stalled()));
    let wrong = tokio::time::timeout(Duration::from_secs(5), wrong)
        .await
        .expect("answered while the body is still open")
        .expect("an answer");
    assert_eq!(grpc_status(&wrong), "16");
}

/// The same over REST/JSON: a route that takes a body refuses a call without a valid token,
/// or with a token whose scope does not cover the call, before reading the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_or_unauthorised_rest_call_is_answered_before_its_body_arrives() {
    let (addr, _, read_only, _) = listening_with(512, ApiScope::Read, None).await;
    let mut sender = h2(addr).await;
    for (token, status) in [
        (None, http::StatusCode::UNAUTHORIZED),
        (
            Some("lrt_0000000000000000.wrong"),
            http::StatusCode::UNAUTHORIZED,
        ),
        (Some(read_only.as_str()), http::StatusCode::FORBIDDEN),
    ] {
        let mut req = http::Request::post(format!("http://{addr}/api/v1/nodes/provision"))
            .header("content-type", "application/json");
        if let Some(token) = token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        let req = req.body(stalled()).expect("request");
        let answer = answered(sender.send_request(req)).await;
        assert_eq!(answer.status(), status);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_hundred_slow_unauthenticated_streams_do_not_delay_an_authenticated_call() {
    // A concurrency limit below the slow streams: were they admitted, they would hold it.
    let (addr, calls, token) = listening(512).await;
    let mut slow = Vec::new();
    for _ in 0..SLOW_STREAMS / 100 {
        let mut sender = h2(addr).await;
        for _ in 0..100 {
            sender.ready().await.expect("ready");
            let call = sender.send_request(request(addr, None, stalled()));
            slow.push(tokio::spawn(call));
        }
    }

    let answer = whole_call(addr, &token).await;

    assert_eq!(grpc_status(&answer), "0");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    for call in slow {
        let resp = call.await.expect("task").expect("answered");
        assert_eq!(grpc_status(&resp), "16");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_concurrency_limit_calls_are_refused_not_queued() {
    // Authenticated calls whose bodies never finish hold the two permits.
    let (addr, _, token) = listening(2).await;
    let mut sender = h2(addr).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let call = sender.send_request(request(addr, Some(&token), stalled()));
        held.push(tokio::spawn(call));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let answer = whole_call(addr, &token).await;

    assert_eq!(grpc_status(&answer), "8", "RESOURCE_EXHAUSTED");
    assert_eq!(answer.headers()["retry-after"], "1");
    // A health probe is answered whatever the load.
    let probe = http::Request::post(format!("http://{addr}{HEALTH}"))
        .header("content-type", "application/grpc")
        .body(grpc_empty())
        .expect("request");
    let health = answered(h2(addr).await.send_request(probe)).await;
    assert_eq!(
        grpc_status(&health),
        "0",
        "the probe was refused under load"
    );
}

/// A token outside its scope, or expired, is refused from the headers too: the handler
/// never runs and the body is never waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_outside_the_tokens_scope_or_after_its_expiry_is_refused_before_its_body() {
    // The probe method is listed nowhere, so it needs `admin`.
    let (addr, calls, read, _) = listening_with(512, ApiScope::Read, None).await;
    let mut sender = h2(addr).await;
    let answer = answered(sender.send_request(request(addr, Some(&read), stalled()))).await;
    assert_eq!(grpc_status(&answer), "7", "PERMISSION_DENIED");
    let message = answer
        .headers()
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("read") && message.contains("admin"),
        "{message}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let past = time::OffsetDateTime::now_utc() - time::Duration::minutes(1);
    let (addr, calls, expired, _) = listening_with(512, ApiScope::Admin, Some(past)).await;
    let mut sender = h2(addr).await;
    let answer = answered(sender.send_request(request(addr, Some(&expired), stalled()))).await;
    assert_eq!(grpc_status(&answer), "16", "UNAUTHENTICATED");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// The trailers' grpc-status of a streamed answer, which must end within `within`.
async fn ended_with(answer: http::Response<hyper::body::Incoming>, within: Duration) -> String {
    use http_body::Body as _;
    let mut body = answer.into_body();
    let read = async {
        while let Some(frame) =
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(trailers) = frame.expect("frame").into_trailers() {
                return trailers
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
            }
        }
        "no trailers".to_owned()
    };
    tokio::time::timeout(within, read)
        .await
        .expect("the stream ended in time")
}

/// A watch stream lives no longer than its token: revoked, or expired, it ends with
/// UNAUTHENTICATED even while its provision sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_ends_when_its_token_is_revoked_or_expires() {
    let (addr, _, token, verifier) = listening_with(512, ApiScope::Admin, None).await;
    let mut sender = h2(addr).await;
    let watch = |token: &str| {
        http::Request::post(format!("http://{addr}{WATCH}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("authorization", format!("Bearer {token}"))
            .body(grpc_empty())
            .expect("request")
    };
    let answer = answered(sender.send_request(watch(&token))).await;
    assert_eq!(answer.status(), 200);
    let id = token.split_once('.').expect("id.secret").0.to_owned();
    let revoker = verifier.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        revoker.remove(&id);
    });
    assert_eq!(ended_with(answer, Duration::from_secs(5)).await, "16");

    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(1);
    let brief = mint("brief", ApiScope::Admin, Some(soon));
    verifier.insert(&brief.record);
    let answer = answered(sender.send_request(watch(brief.token.expose_secret()))).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(ended_with(answer, Duration::from_secs(5)).await, "16");
}
