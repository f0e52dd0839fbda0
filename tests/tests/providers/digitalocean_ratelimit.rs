//! Rate limits on a paused clock: the client's limiter keeps a sustained workload under the
//! fake's 250 requests per minute without a single 429, a forced 429 holds the next request
//! back for at least its `Retry-After`, and a client without a limiter does meet the fake's
//! limit (so the first result is the limiter's doing).
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::{CloudProvider, ErrorKind};
use levelrail_sim::fakes::Fault;
use tokio::time::Instant;

use crate::digitalocean_support::{
    TOKEN, answered, client, client_with, create_request, start_fake,
};

#[tokio::test(start_paused = true)]
async fn six_hundred_reads_at_full_speed_get_no_429_from_a_250_per_minute_limit() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let id = do_
        .create_server(&create_request("npv_busy"))
        .await
        .expect("create")
        .id;
    let start = Instant::now();

    let results: Vec<_> = futures::stream::iter(0..600)
        .map(|_| do_.get_server(&id))
        .buffer_unordered(16)
        .collect()
        .await;

    assert!(results.iter().all(Result::is_ok));
    let log = fake.request_log();
    assert_eq!(answered(&log, 429), 0, "no request was throttled");
    let elapsed = start.elapsed();
    // The burst allowance left after the create, then 250 per minute.
    assert!(
        elapsed >= Duration::from_secs(80) && elapsed < Duration::from_secs(95),
        "{elapsed:?}"
    );
    let last = log.last().expect("requests were made");
    assert_eq!(last.status, Some(200));
}

#[tokio::test(start_paused = true)]
async fn without_a_limiter_the_same_workload_is_throttled() {
    let fake = start_fake(|_| {}).await;
    let do_ = client_with(&fake, TOKEN, Arc::new(RateLimiter::unlimited()));

    let results: Vec<_> = futures::stream::iter(0..300)
        .map(|_| do_.list_regions())
        .buffer_unordered(16)
        .collect()
        .await;

    assert!(
        answered(&fake.request_log(), 429) > 0,
        "the fake enforces its limit"
    );
    let failures: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures
            .iter()
            .all(|e| e.kind == ErrorKind::RateLimited && e.retry_after.is_some()),
        "{failures:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn after_a_429_with_retry_after_7_the_next_request_waits_at_least_7_seconds() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    fake.faults().inject(
        Some("GET"),
        "/v2/regions",
        1,
        Fault::RateLimited {
            retry_after_secs: 7,
        },
    );

    let regions = do_
        .list_regions()
        .await
        .expect("the call succeeds after waiting");
    let sizes = do_.list_sizes("nyc3").await.expect("later calls work");

    assert!(!regions.is_empty() && !sizes.is_empty());
    let log = fake.request_log();
    let throttled = log
        .iter()
        .position(|r| r.status == Some(429))
        .expect("the forced 429");
    let next = &log[throttled + 1];
    let waited = next.at - log[throttled].at;
    assert!(
        waited >= Duration::from_secs(7),
        "the next request went out after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(8),
        "and not much later: {waited:?}"
    );
    let headers_said = &log[throttled].response["id"];
    assert_eq!(headers_said, "too_many_requests");
}
