//! The project's rate-limit bucket, charged by the fake's HTTP edge for every request.
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// The project's token bucket, on `tokio::time` so a paused test clock drives it.
#[derive(Debug)]
pub(crate) struct Bucket {
    capacity: f64,
    refill_per_sec: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A project limited to `limit` requests an hour, refilling evenly (one a second at
    /// 3,600, as Hetzner's documentation says).
    pub(crate) fn per_hour(limit: u32) -> Self {
        let capacity = f64::from(limit);
        Self {
            capacity,
            refill_per_sec: capacity / 3600.0,
            tokens: capacity,
            last: Instant::now(),
        }
    }

    /// Requests per hour (what `RateLimit-Limit` reports).
    pub(crate) fn limit(&self) -> u64 {
        self.capacity as u64
    }

    /// Takes a token if there is one; returns whether it did and the header values.
    pub(crate) fn take(&mut self) -> (bool, [(&'static str, String); 3]) {
        let now = Instant::now();
        self.tokens = (self.tokens
            + now.saturating_duration_since(self.last).as_secs_f64() * self.refill_per_sec)
            .min(self.capacity);
        self.last = now;
        // A hair of tolerance: a client pacing itself with the same rate must not lose a
        // token to floating-point rounding.
        let allowed = self.tokens >= 1.0 - 1e-6;
        if allowed {
            self.tokens = (self.tokens - 1.0).max(0.0);
        }
        let until_full = ((self.capacity - self.tokens) / self.refill_per_sec).ceil() as u64;
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let headers = [
            ("ratelimit-limit", format!("{}", self.limit())),
            (
                "ratelimit-remaining",
                format!("{}", self.tokens.floor() as u64),
            ),
            ("ratelimit-reset", format!("{}", unix + until_full)),
        ];
        (allowed, headers)
    }
}
