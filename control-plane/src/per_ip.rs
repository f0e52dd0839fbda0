//! Request budgets, a token bucket per key. The agent listener, which the internet
//! reaches, answers a flood from one source address before any handler or database work:
//! `RESOURCE_EXHAUSTED` to gRPC (the agent retries it) and `429` with `Retry-After` to HTTP
//! (cloud-init's `curl --retry` honours it). That budget is generous, since a fleet behind
//! one NAT address enrolls through it at once. The public listener keeps one per API token
//! (`--token-rate-limit`).
use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

/// Keys tracked before full buckets are forgotten.
const TRACKED: usize = 4096;

/// Requests each key (a source address, an API token) may make to `paths`: `burst` at
/// once, then `per_second`.
#[derive(Debug)]
pub struct Budget<K> {
    burst: f64,
    per_second: f64,
    /// The request paths the budget applies to; every other path is free (the [`limit`]
    /// middleware's concern; a caller of [`Budget::take`] decides for itself).
    paths: &'static [&'static str],
    buckets: Mutex<HashMap<K, Bucket>>,
}

/// A budget per source address.
pub type PerIpBudget = Budget<IpAddr>;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl<K: Hash + Eq> Budget<K> {
    /// `burst` requests to `paths` at once, refilled at `per_second`.
    pub fn new(burst: u32, per_second: f64, paths: &'static [&'static str]) -> Self {
        Self {
            burst: f64::from(burst),
            per_second,
            paths,
            buckets: Mutex::default(),
        }
    }

    /// Takes one request from `key`'s budget at `now`; when it is spent, how long until the
    /// next request is allowed.
    pub fn take(&self, key: K, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= TRACKED && !buckets.contains_key(&key) {
            // Forget the keys whose budget has refilled: they lose nothing.
            buckets.retain(|_, b| self.refilled(*b, now) < self.burst);
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let tokens = self.refilled(*bucket, now);
        if tokens >= 1.0 {
            *bucket = Bucket {
                tokens: tokens - 1.0,
                at: now,
            };
            return Ok(());
        }
        *bucket = Bucket { tokens, at: now };
        Err(Duration::from_secs_f64((1.0 - tokens) / self.per_second))
    }

    fn refilled(&self, b: Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        (b.tokens + elapsed * self.per_second).min(self.burst)
    }
}

impl PerIpBudget {
    /// The agent listener's: enrollments and progress reports, 120 at once, then 10 a
    /// second, per address. Heartbeats are not counted: a fleet behind one NAT address
    /// sends them all from it.
    pub fn agent_listener() -> Self {
        Self::new(
            120,
            10.0,
            &[
                "/levelrail.nodes.v1.EnrollmentService/Enroll",
                "/levelrail.nodes.v1.EnrollmentService/ReportProgress",
                "/v1/provision-progress",
            ],
        )
    }
}

/// Middleware: a request to a budgeted path over its address's budget is answered at
/// once. Requests without a peer address (not from a listener) pass.
pub async fn limit(State(budget): State<Arc<PerIpBudget>>, req: Request, next: Next) -> Response {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().copied();
    let Some(ConnectInfo(peer)) = peer.filter(|_| budget.paths.contains(&req.uri().path())) else {
        return next.run(req).await;
    };
    let Err(wait) = budget.take(crate::listener::source_key(peer.ip()), Instant::now()) else {
        return next.run(req).await;
    };
    tracing::info!(%peer, "request refused: this address is over its request budget");
    over_budget(crate::listener::is_grpc(&req), wait, "this address")
}

/// The answer to a request over `whose` budget: `RESOURCE_EXHAUSTED` to gRPC, `429` to
/// HTTP, with `Retry-After` in whole seconds, rounded up (a client that waits as told is
/// let in).
pub(crate) fn over_budget(grpc: bool, wait: Duration, whose: &str) -> Response {
    let seconds = u64::try_from(wait.as_millis().div_ceil(1000).max(1)).unwrap_or(u64::MAX);
    let message = format!("too many requests from {whose}; retry in {seconds} s");
    let mut resp = if grpc {
        tonic::Status::resource_exhausted(message)
            .into_http::<axum::body::Body>()
            .into_response()
    } else {
        (http::StatusCode::TOO_MANY_REQUESTS, format!("{message}\n")).into_response()
    };
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    #[test]
    fn an_address_gets_its_burst_then_its_rate_and_others_are_not_affected() {
        let budget = PerIpBudget::new(3, 2.0, &[]);
        let (a, b): (IpAddr, IpAddr) = (
            "192.0.2.1".parse().expect("ip"),
            "192.0.2.2".parse().expect("ip"),
        );
        let t0 = Instant::now();
        for _ in 0..3 {
            budget.take(a, t0).expect("within the burst");
        }
        let wait = budget.take(a, t0).expect_err("spent");
        assert_eq!(wait, Duration::from_millis(500));
        budget
            .take(b, t0)
            .expect("another address has its own budget");
        budget
            .take(a, t0 + Duration::from_millis(500))
            .expect("refilled by one");
        budget
            .take(a, t0 + Duration::from_millis(500))
            .expect_err("and only by one");
    }

    #[test]
    fn full_buckets_are_forgotten_when_many_addresses_were_seen() {
        let budget = PerIpBudget::new(2, 1.0, &[]);
        let t0 = Instant::now();
        for i in 0..TRACKED as u32 {
            budget
                .take(IpAddr::from(i.to_be_bytes()), t0)
                .expect("fresh");
        }
        let later = t0 + Duration::from_secs(10);
        budget
            .take("198.51.100.1".parse().expect("ip"), later)
            .expect("fresh");
        let tracked = budget.buckets.lock().expect("lock").len();
        assert_eq!(tracked, 1, "refilled buckets were kept");
    }

    #[tokio::test]
    async fn a_flood_is_answered_429_to_http_and_resource_exhausted_to_grpc() {
        let budget = Arc::new(PerIpBudget::new(2, 0.5, &["/v1/provision-progress"]));
        let router = axum::Router::new()
            .fallback(|| async { "handled" })
            .layer(axum::middleware::from_fn_with_state(budget, limit));
        let peer: SocketAddr = "203.0.113.9:40000".parse().expect("addr");
        let call = |grpc: bool| {
            let mut req = Request::post("/v1/provision-progress");
            if grpc {
                req = req.header("content-type", "application/grpc");
            }
            let mut req = req.body(Body::empty()).expect("request");
            req.extensions_mut().insert(ConnectInfo(peer));
            tower::ServiceExt::oneshot(router.clone(), req)
        };
        for _ in 0..2 {
            assert_eq!(call(false).await.expect("answer").status(), 200);
        }
        let mut other = Request::get("/v1/heartbeat")
            .body(Body::empty())
            .expect("request");
        other.extensions_mut().insert(ConnectInfo(peer));
        let other = tower::ServiceExt::oneshot(router.clone(), other)
            .await
            .expect("answer");
        assert_eq!(other.status(), 200, "a path outside the budget was refused");

        let http = call(false).await.expect("answer");
        let grpc = call(true).await.expect("answer");

        assert_eq!(http.status(), 429);
        assert_eq!(http.headers()["retry-after"], "2");
        assert_eq!(grpc.headers()["grpc-status"], "8", "RESOURCE_EXHAUSTED");
        assert_eq!(grpc.headers()["retry-after"], "2");
    }
}
