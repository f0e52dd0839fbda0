//! The client's limiter against the fake's own bucket (3,600/h unless the project's limit
//! was changed), both on the paused tokio clock: a sustained workload is never throttled,
//! a project's own limit, reported in `RateLimit-Limit`, is followed, and after a 429 the
//! next request waits at least `Retry-After`.
use std::time::Duration;

use levelrail_clouds::CloudProvider as _;
use levelrail_sim::fakes::Fault;
use tokio::time::Instant;

use crate::hetzner_support::{TOKEN, client, create_request, start_fake};

#[tokio::test(start_paused = true)]
async fn a_sustained_workload_of_5000_calls_stays_under_3600_per_hour_without_a_429() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);
    let server = hetzner
        .create_server(&create_request("web-1", "npv_rate"))
        .await
        .expect("create");
    let start = Instant::now();

    for _ in 0..5000 {
        hetzner.get_server(&server.id).await.expect("get");
    }

    let log = fake.request_log();
    assert_eq!(log.iter().filter(|r| r.status == Some(429)).count(), 0);
    // 3,600 of burst, then one per second: the rest took about 1,400 s of virtual time.
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1350) && elapsed < Duration::from_secs(1500),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_client_follows_a_project_limit_other_than_the_default() {
    // Lowered to 60 an hour: 60 at once, then one a minute, and never a 429.
    let fake = start_fake(|c| c.rate_limit = Some(60)).await;
    let hetzner = client(&fake, TOKEN);
    let start = Instant::now();
    for _ in 0..62 {
        hetzner.list_regions().await.expect("regions");
    }
    let elapsed = start.elapsed();
    let log = fake.request_log();
    assert_eq!(log.iter().filter(|r| r.status == Some(429)).count(), 0);
    assert!(
        elapsed >= Duration::from_secs(119) && elapsed < Duration::from_secs(125),
        "{elapsed:?}"
    );

    // Raised to 36,000 an hour: 4,000 calls, more than the default burst, go at once.
    let fake = start_fake(|c| c.rate_limit = Some(36_000)).await;
    let hetzner = client(&fake, TOKEN);
    let start = Instant::now();
    for _ in 0..4000 {
        hetzner.list_regions().await.expect("regions");
    }
    let elapsed = start.elapsed();
    assert_eq!(
        fake.request_log()
            .iter()
            .filter(|r| r.status == Some(429))
            .count(),
        0
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test(start_paused = true)]
async fn after_another_tool_spent_the_budget_a_429_waits_for_one_request_not_the_whole_reset() {
    // 360 an hour, one every 10 s; another tool of the project spent them all.
    let fake = start_fake(|c| c.rate_limit = Some(360)).await;
    let other = unpaced_client(&fake);
    for _ in 0..360 {
        other.list_regions().await.expect("regions");
    }
    fake.clear_request_log();

    let hetzner = client(&fake, TOKEN);
    hetzner.list_regions().await.expect("regions after a wait");

    // RateLimit-Reset says the budget is whole in an hour: the client waits for one
    // request's worth instead, 10 s.
    let log = fake.request_log();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!((log[0].status, log[1].status), (Some(429), Some(200)));
    let waited = log[1].at - log[0].at;
    assert!(
        waited >= Duration::from_millis(9_500) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn after_a_429_with_retry_after_7_the_next_request_waits_at_least_7_seconds() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);
    let server = hetzner
        .create_server(&create_request("web-1", "npv_retry"))
        .await
        .expect("create");
    fake.faults().inject(
        Some("GET"),
        "/servers/",
        1,
        Fault::RateLimited {
            retry_after_secs: 7,
        },
    );

    hetzner
        .get_server(&server.id)
        .await
        .expect("get succeeds after waiting");

    let log = fake.request_log();
    let throttled = log
        .iter()
        .position(|r| r.status == Some(429))
        .expect("a 429");
    let next = log.get(throttled + 1).expect("a request after the 429");
    let waited = next.at - log[throttled].at;
    assert!(waited >= Duration::from_secs(7), "{waited:?}");
    assert_eq!(next.status, Some(200));
}

#[tokio::test(start_paused = true)]
async fn when_the_projects_bucket_is_empty_the_fake_answers_429_and_the_client_waits_and_retries() {
    // Another tool shares the project: a client without a limiter of its own cannot know.
    // 60 an hour: one more a minute, within the client's retries.
    let fake = start_fake(|c| c.rate_limit = Some(60)).await;
    let hetzner = unpaced_client(&fake);

    for _ in 0..63 {
        hetzner
            .list_regions()
            .await
            .expect("regions once the bucket refilled");
    }

    let log = fake.request_log();
    let throttled: Vec<_> = log.iter().filter(|r| r.status == Some(429)).collect();
    assert!(!throttled.is_empty());
    assert!(
        throttled
            .iter()
            .all(|r| r.response["error"]["code"] == "rate_limit_exceeded")
    );
    assert_eq!(log.iter().filter(|r| r.status == Some(200)).count(), 63);
}

#[tokio::test]
async fn every_answer_carries_the_rate_limit_headers() {
    let fake = start_fake(|c| c.rate_limit = Some(2)).await;
    let addr = fake
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    let mut heads = Vec::new();
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        let request = format!(
            "GET /v1/locations HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        );
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
            .await
            .expect("write");
        let mut answer = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut answer)
            .await
            .expect("read");
        heads.push(answer.to_ascii_lowercase());
    }

    for (head, remaining) in heads.iter().zip(["1", "0", "0"]) {
        assert!(head.contains("ratelimit-limit: 2\r\n"), "{head}");
        assert!(
            head.contains(&format!("ratelimit-remaining: {remaining}\r\n")),
            "{head}"
        );
        assert!(head.contains("ratelimit-reset: "), "{head}");
    }
    assert!(heads[2].starts_with("http/1.1 429"), "{}", heads[2]);
}

/// A client of `fake` without a limiter of its own (another tool of the project).
fn unpaced_client(
    fake: &levelrail_sim::fakes::hetzner::FakeHetznerHandle,
) -> levelrail_clouds::hetzner::HetznerProvider {
    levelrail_clouds::hetzner::HetznerProvider::new(
        &fake.base_url(),
        secrecy::SecretString::from(TOKEN.to_owned()),
        std::sync::Arc::new(levelrail_clouds::ratelimit::RateLimiter::unlimited()),
        crate::hetzner_support::fast_policy(),
    )
    .expect("client")
}
