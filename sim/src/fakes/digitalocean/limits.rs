//! The fake's rate limits, per token: DigitalOcean allows 250 requests per minute and 5,000
//! per hour, and requests "expire" back into the pool over time, modelled here as two token
//! buckets refilling continuously. Time comes from `tokio::time`, so a paused test clock
//! drives them. Every answer carries `ratelimit-limit` / `-remaining` / `-reset`.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

/// The limits the fake enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Requests per minute.
    pub per_minute: u32,
    /// Requests per hour (the one `ratelimit-limit` reports).
    pub per_hour: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_minute: 250,
            per_hour: 5000,
        }
    }
}

/// Tokens below one by less than this still pass: the client's limiter computes the same
/// refill with floating point summed in a different order.
const SLACK: f64 = 1e-3;

/// The buckets' state.
#[derive(Debug)]
pub(super) struct Limits {
    config: RateLimits,
    minute: f64,
    hour: f64,
    last: Instant,
}

/// The outcome of taking a token.
#[derive(Debug)]
pub(super) enum Taken {
    /// Allowed; the headers to add.
    Allowed(HeaderMap),
    /// Refused; wait this long (the headers to add are included).
    Limited(Duration, HeaderMap),
}

impl Limits {
    pub(super) fn new(config: RateLimits) -> Self {
        Self {
            config,
            minute: f64::from(config.per_minute),
            hour: f64::from(config.per_hour),
            last: Instant::now(),
        }
    }

    /// Takes one request from both buckets, or says how long until it could.
    pub(super) fn take(&mut self) -> Taken {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        let (per_min, per_hour) = (
            f64::from(self.config.per_minute) / 60.0,
            f64::from(self.config.per_hour) / 3600.0,
        );
        self.minute = (self.minute + elapsed * per_min).min(f64::from(self.config.per_minute));
        self.hour = (self.hour + elapsed * per_hour).min(f64::from(self.config.per_hour));
        let wait_min = if self.minute + SLACK < 1.0 {
            (1.0 - self.minute) / per_min
        } else {
            0.0
        };
        let wait_hour = if self.hour + SLACK < 1.0 {
            (1.0 - self.hour) / per_hour
        } else {
            0.0
        };
        let wait = wait_min.max(wait_hour);
        if wait > 0.0 {
            return Taken::Limited(Duration::from_secs_f64(wait), self.headers(wait));
        }
        self.minute = (self.minute - 1.0).max(0.0);
        self.hour = (self.hour - 1.0).max(0.0);
        Taken::Allowed(self.headers(0.0))
    }

    /// The current headers (for answers produced by a fault).
    pub(super) fn headers_now(&self) -> HeaderMap {
        self.headers(0.0)
    }

    /// `ratelimit-reset` is the UNIX time when the next request expires back into the hourly
    /// pool (now when the pool is full).
    fn headers(&self, wait: f64) -> HeaderMap {
        let per_hour = f64::from(self.config.per_hour) / 3600.0;
        let until_refill = if self.hour >= f64::from(self.config.per_hour) {
            0.0
        } else {
            (1.0 - self.hour.fract()) / per_hour
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        let reset = (now + until_refill.max(wait)).ceil() as u64;
        let mut h = HeaderMap::new();
        h.insert("ratelimit-limit", HeaderValue::from(self.config.per_hour));
        h.insert(
            "ratelimit-remaining",
            HeaderValue::from(self.hour.floor().max(0.0) as u64),
        );
        h.insert("ratelimit-reset", HeaderValue::from(reset));
        h
    }
}
