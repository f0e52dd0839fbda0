//! The fake DigitalOcean at the HTTP level, without the client: rate-limit headers on every
//! answer, `Retry-After` on a 429, bearer authentication, read-only tokens, and the boot hook
//! running once per droplet with its user-data whether or not anyone polls.
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use levelrail_clouds::CloudProvider;
use levelrail_sim::fakes::{BootEvent, Fault};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::digitalocean_support::{READ_ONLY_TOKEN, TOKEN, client, create_request, start_fake};

/// One HTTP/1.1 exchange: (status, lowercase header lines, body).
async fn exchange(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> (u16, Vec<String>, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let length = if method == "GET" {
        ""
    } else {
        "Content-Length: 2\r\nContent-Type: application/json\r\n"
    };
    let body = if method == "GET" { "" } else { "{}" };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}{length}Connection: close\r\n\r\n{body}"
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a complete answer");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    (
        status,
        lines.map(str::to_ascii_lowercase).collect(),
        body.to_owned(),
    )
}

fn header<'a>(headers: &'a [String], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find_map(|h| h.strip_prefix(&format!("{name}: ")))
}

#[tokio::test]
async fn every_answer_carries_digitaloceans_rate_limit_headers_and_a_429_says_when_to_retry() {
    let fake = start_fake(|_| {}).await;
    fake.faults().inject(
        Some("GET"),
        "/v2/sizes",
        1,
        Fault::RateLimited {
            retry_after_secs: 7,
        },
    );

    let (status, headers, _) = exchange(fake.addr(), "GET", "/v2/account", Some(TOKEN)).await;
    let (limited, limited_headers, body) =
        exchange(fake.addr(), "GET", "/v2/sizes", Some(TOKEN)).await;

    assert_eq!(status, 200);
    assert_eq!(header(&headers, "ratelimit-limit"), Some("5000"));
    assert_eq!(header(&headers, "ratelimit-remaining"), Some("4999"));
    let reset: u64 = header(&headers, "ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("a reset time");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        (now..now + 10).contains(&reset),
        "a UNIX time: {reset} vs {now}"
    );
    assert_eq!(limited, 429);
    assert_eq!(header(&limited_headers, "retry-after"), Some("7"));
    assert_eq!(header(&limited_headers, "ratelimit-remaining"), Some("0"));
    assert!(body.contains("\"too_many_requests\""), "{body}");
}

#[tokio::test]
async fn requests_without_the_token_are_refused_and_a_read_only_token_cannot_write() {
    let fake = start_fake(|_| {}).await;

    let (missing, _, body) = exchange(fake.addr(), "GET", "/v2/regions", None).await;
    let (wrong, _, _) = exchange(fake.addr(), "GET", "/v2/regions", Some("dop_v1_nope")).await;
    let (read, _, _) = exchange(fake.addr(), "GET", "/v2/regions", Some(READ_ONLY_TOKEN)).await;
    let (write, _, write_body) =
        exchange(fake.addr(), "POST", "/v2/tags", Some(READ_ONLY_TOKEN)).await;

    assert_eq!((missing, wrong, read, write), (401, 401, 200, 403));
    assert!(
        body.contains("\"unauthorized\"") && write_body.contains("\"forbidden\""),
        "{body} {write_body}"
    );
    assert!(fake.tags().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_boot_hook_runs_once_with_the_user_data_when_the_droplet_becomes_active() {
    let booted: Arc<Mutex<Vec<BootEvent>>> = Arc::default();
    let seen = Arc::clone(&booted);
    let fake = start_fake(move |c| {
        c.state_step = Duration::from_secs(20);
        c.boot_hook = Some(Arc::new(move |e| seen.lock().unwrap().push(e)));
    })
    .await;
    let do_ = client(&fake, TOKEN);
    let req = create_request("npv_boot");
    let created = do_.create_server(&req).await.expect("create");

    tokio::time::sleep(Duration::from_secs(19)).await;
    assert!(booted.lock().unwrap().is_empty(), "still new");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for _ in 0..3 {
        do_.get_server(&created.id).await.expect("get");
    }

    let events = booted.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].server_id.as_str(), events[0].user_data.as_str()),
        (created.id.as_str(), req.user_data.as_str())
    );
    assert_eq!(
        Some(events[0].ipv4.clone()),
        do_.get_server(&created.id).await.expect("get").ipv4
    );
}
