//! Hostile connections on the listeners: sockets that never send a byte are closed once the
//! first-request deadline passes (before a TLS handshake too), a source address cannot hold
//! more than its share, and a real client is answered meanwhile.
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt as _;
use levelrail::listener::{ConnectionLimits, serve_within};
use levelrail::pki::{InternalTlsArgs, init};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

const IDLE_PER_LISTENER: usize = 600;

/// A listener serving `GET /ping` within `limits` (over TLS when `tls` is set).
async fn listening(
    limits: ConnectionLimits,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let router = axum::Router::new()
        .route("/ping", axum::routing::get(|| async { "pong" }))
        .route("/slow", axum::routing::get(slow_answer));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(serve_within(listener, router, tls, rx, limits));
    (addr, stop)
}

/// An answer whose body takes 2 s to finish.
async fn slow_answer() -> axum::body::Body {
    let parts = futures::stream::iter(["slow", "-done"]).then(|part| async move {
        if part == "-done" {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok::<_, std::convert::Infallible>(part)
    });
    axum::body::Body::from_stream(parts)
}

/// Whether the server closed `conn` within `wait` (end of stream or a reset).
async fn closed_within(conn: &mut TcpStream, wait: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(wait, conn.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// `GET /ping` over plain HTTP/1.1 on a new connection: the answer's text.
async fn ping(addr: SocketAddr) -> String {
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    conn.write_all(b"GET /ping HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.expect("read");
    answer
}

fn tls_config(dir: &std::path::Path) -> std::sync::Arc<rustls::ServerConfig> {
    levelrail::tls::install_crypto_provider();
    let files = init(&dir.join("pki"), &[], &[]).expect("pki");
    InternalTlsArgs {
        internal_ca: files.ca,
        internal_cert: files.credentials.0,
        internal_key: files.credentials.1,
    }
    .server_config()
    .expect("TLS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_hundred_silent_connections_are_closed_while_a_real_client_is_answered() {
    let dir = tempfile::tempdir().expect("dir");
    let limits = ConnectionLimits {
        first_request: Duration::from_secs(3),
        per_ip: 2 * IDLE_PER_LISTENER,
        total: 2 * IDLE_PER_LISTENER,
        ..ConnectionLimits::default()
    };
    let (plain, _stop_plain) = listening(limits, None).await;
    let (tls, _stop_tls) = listening(limits, Some(tls_config(dir.path()))).await;

    let mut idle = Vec::new();
    for addr in [plain, tls] {
        for _ in 0..IDLE_PER_LISTENER {
            idle.push(TcpStream::connect(addr).await.expect("connect"));
        }
    }
    let answer = ping(plain).await;

    assert!(answer.ends_with("pong"), "{answer}");
    // Answered while every silent connection was still open: not queued behind them.
    let mut open = 0;
    for conn in &mut idle {
        if !closed_within(conn, Duration::from_millis(1)).await {
            open += 1;
        }
    }
    assert_eq!(
        open,
        idle.len(),
        "silent connections closed before the deadline"
    );
    let mut still_open = 0;
    for conn in &mut idle {
        if !closed_within(conn, Duration::from_secs(10)).await {
            still_open += 1;
        }
    }
    assert_eq!(still_open, 0, "silent connections outlived the deadline");
}

#[tokio::test]
async fn one_address_cannot_hold_more_than_its_share_of_connections() {
    let limits = ConnectionLimits {
        first_request: Duration::from_secs(2),
        per_ip: 4,
        total: 100,
        ..ConnectionLimits::default()
    };
    let (addr, _stop) = listening(limits, None).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(addr).await.expect("connect"));
    }

    let mut refused = TcpStream::connect(addr).await.expect("connect");

    assert!(
        closed_within(&mut refused, Duration::from_secs(1)).await,
        "a fifth connection from the same address was kept"
    );
    for conn in &mut held {
        assert!(closed_within(conn, Duration::from_secs(10)).await);
    }
    // Their share is free again once they are gone.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(ping(addr).await.ends_with("pong"));
}

#[tokio::test]
async fn a_connection_that_asked_for_something_outlives_the_deadline() {
    let limits = ConnectionLimits {
        first_request: Duration::from_millis(500),
        ..ConnectionLimits::default()
    };
    let (addr, _stop) = listening(limits, None).await;
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    let request = b"GET /ping HTTP/1.1\r\nhost: test\r\n\r\n";
    conn.write_all(request).await.expect("write");
    let mut buf = vec![0u8; 4096];
    let n = conn.read(&mut buf).await.expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).ends_with("pong"));

    tokio::time::sleep(Duration::from_secs(1)).await;

    conn.write_all(request).await.expect("write again");
    let n = conn.read(&mut buf).await.expect("read again");
    assert!(
        String::from_utf8_lossy(&buf[..n]).ends_with("pong"),
        "closed after the deadline"
    );
}

#[tokio::test]
async fn an_idle_connection_is_closed_but_a_long_answer_is_not_cut() {
    let limits = ConnectionLimits {
        idle: Duration::from_millis(500),
        ..ConnectionLimits::default()
    };
    let (addr, _stop) = listening(limits, None).await;
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    conn.write_all(b"GET /slow HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .expect("write");

    // The answer takes 2 s, four times the idle limit: it arrives whole.
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&answer).contains("-done") {
        let n = conn.read(&mut buf).await.expect("read");
        assert!(
            n > 0,
            "closed mid-answer: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buf[..n]);
    }

    // Then nothing is in flight: the connection is closed once idle.
    assert!(
        closed_within(&mut conn, Duration::from_secs(5)).await,
        "an idle connection stayed open"
    );
}
