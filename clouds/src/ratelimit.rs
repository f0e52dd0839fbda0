//! Client-side rate limiting: one limiter per credential, made of token buckets sized to the
//! provider's published limits, plus a shared pause when the provider answers 429. Built on
//! `tokio::time`, so tests can run it on a paused (scaled) clock.
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A token bucket: `capacity` requests of burst, refilled at `refill_per_sec`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Burst size.
    pub capacity: f64,
    /// Sustained rate.
    pub refill_per_sec: f64,
}

#[derive(Debug)]
struct State {
    /// The buckets; the one the provider reports on follows its reported limit.
    buckets: Vec<Bucket>,
    tokens: Vec<f64>,
    last: Instant,
    paused_until: Option<Instant>,
}

/// A limiter shared by every request made with one credential.
#[derive(Debug)]
pub struct RateLimiter {
    /// The bucket the provider's `RateLimit-Limit` / `RateLimit-Remaining` headers describe
    /// (an hourly budget), if it sends them.
    reported: Option<usize>,
    state: Mutex<State>,
}

impl RateLimiter {
    /// A limiter enforcing every bucket at once (all must have a token).
    pub fn new(buckets: &[Bucket]) -> Self {
        Self {
            reported: None,
            state: Mutex::new(State {
                buckets: buckets.to_vec(),
                tokens: buckets.iter().map(|b| b.capacity).collect(),
                last: Instant::now(),
                paused_until: None,
            }),
        }
    }

    /// Hetzner Cloud: 3,600 requests per hour per project, refilling one per second, the
    /// default limit: a project whose limit Hetzner changed reports it in every answer's
    /// `RateLimit-Limit`, and the bucket follows.
    pub fn hetzner() -> Self {
        Self::new(&[Bucket {
            capacity: 3600.0,
            refill_per_sec: 1.0,
        }])
        .reported_hourly(0)
    }

    /// DigitalOcean: 250 per minute and 5,000 per hour; the hourly limit is the one its
    /// `RateLimit-*` headers report.
    pub fn digitalocean() -> Self {
        Self::new(&[
            Bucket {
                capacity: 250.0,
                refill_per_sec: 250.0 / 60.0,
            },
            Bucket {
                capacity: 5000.0,
                refill_per_sec: 5000.0 / 3600.0,
            },
        ])
        .reported_hourly(1)
    }

    /// Marks bucket `index` as the hourly budget the provider reports in `RateLimit-Limit`
    /// and `RateLimit-Remaining`; see [`RateLimiter::report`].
    fn reported_hourly(mut self, index: usize) -> Self {
        self.reported = Some(index);
        self
    }

    /// What the provider's answer said of the hourly budget: `limit` requests per hour,
    /// `remaining` left now. A limit other than the bucket's (a project whose limit was
    /// raised or lowered) resizes the bucket and takes the provider's count; otherwise the
    /// bucket keeps the lower of its own count and the provider's (other clients of the
    /// same project spend the same budget). A limiter the provider reports nothing for
    /// ignores it, as it does a limit below one.
    pub fn report(&self, limit: u64, remaining: u64) {
        let Some(i) = self.reported else { return };
        if limit == 0 {
            return;
        }
        let (limit, remaining) = (limit as f64, remaining as f64);
        let mut s = self.lock();
        s.refill(Instant::now());
        let b = &mut s.buckets[i];
        if (b.capacity - limit).abs() >= 1.0 {
            *b = Bucket {
                capacity: limit,
                refill_per_sec: limit / 3600.0,
            };
            s.tokens[i] = remaining.min(limit);
        } else {
            s.tokens[i] = s.tokens[i].min(remaining);
        }
    }

    /// No limit (tests of other behaviour).
    pub fn unlimited() -> Self {
        Self::new(&[])
    }

    /// Waits until a request may be sent, then takes a token from every bucket.
    pub async fn acquire(&self) {
        loop {
            let wait = self.try_take(Instant::now());
            match wait {
                None => return,
                Some(d) => tokio::time::sleep(d).await,
            }
        }
    }

    /// Makes every caller wait until `until` (a 429 answer: the provider's limit is shared
    /// by every request with this credential, also with other tools). The shortest-window
    /// bucket is drained so the burst does not resume at once; the longer windows keep
    /// their tokens, so one 429 does not slow the client to the hourly rate for an hour.
    pub fn pause_until(&self, until: Instant) {
        let mut s = self.lock();
        if s.paused_until.is_none_or(|p| p < until) {
            s.paused_until = Some(until);
        }
        if let Some(first) = s.tokens.first_mut() {
            *first = first.min(1.0);
        }
    }

    /// `None` when a token was taken; otherwise how long to wait before trying again.
    fn try_take(&self, now: Instant) -> Option<Duration> {
        let mut s = self.lock();
        if let Some(p) = s.paused_until {
            if now < p {
                return Some(p - now);
            }
            s.paused_until = None;
        }
        s.refill(now);
        let mut wait = 0f64;
        for (b, t) in s.buckets.iter().zip(&s.tokens) {
            if *t < 1.0 {
                wait = wait.max((1.0 - *t) / b.refill_per_sec);
            }
        }
        if wait > 0.0 {
            return Some(Duration::from_secs_f64(wait.max(0.001)));
        }
        for t in &mut s.tokens {
            *t -= 1.0;
        }
        None
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few numbers replaced wholesale; a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Adds the tokens earned since the last refill.
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        for (b, t) in self.buckets.iter().zip(self.tokens.iter_mut()) {
            *t = (*t + elapsed * b.refill_per_sec).min(b.capacity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_is_allowed_then_the_sustained_rate_applies() {
        let l = RateLimiter::new(&[Bucket {
            capacity: 5.0,
            refill_per_sec: 1.0,
        }]);
        let start = Instant::now();
        for _ in 0..5 {
            l.acquire().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(10),
            "burst is immediate"
        );
        for _ in 0..10 {
            l.acquire().await;
        }
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(10) && e < Duration::from_secs(11),
            "{e:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn digitalocean_stays_under_250_per_minute() {
        let l = RateLimiter::digitalocean();
        let start = Instant::now();
        for _ in 0..500 {
            l.acquire().await;
        }
        // 250 burst, then 250 more at 250/min.
        assert!(
            start.elapsed() >= Duration::from_secs(59),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reported_limit_resizes_the_hourly_bucket() {
        let l = RateLimiter::hetzner();
        l.report(36_000, 35_999);
        let start = Instant::now();
        for _ in 0..20_000 {
            l.acquire().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(10),
            "a raised limit is a larger burst"
        );
        // Lowered again: the provider's count is taken, then its refill rate.
        l.report(720, 1);
        l.acquire().await;
        let start = Instant::now();
        l.acquire().await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(5) && e < Duration::from_secs(6),
            "720/h is one per 5 s: {e:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lower_remaining_count_is_kept_and_a_higher_one_ignored() {
        let l = RateLimiter::hetzner();
        // Another client of the project spent most of the budget.
        l.report(3600, 3);
        let start = Instant::now();
        for _ in 0..3 {
            l.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(10));
        l.acquire().await;
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "the fourth waits for a refill"
        );
        // An answer counting more than the bucket holds (a stale one) gives nothing back.
        l.report(3600, 3600);
        let start = Instant::now();
        l.acquire().await;
        assert!(
            start.elapsed() >= Duration::from_millis(900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reports_are_ignored_where_the_provider_sends_none_and_when_zero() {
        for l in [
            RateLimiter::new(&[Bucket {
                capacity: 2.0,
                refill_per_sec: 1.0,
            }]),
            RateLimiter::hetzner(),
        ] {
            l.report(0, 0);
            let start = Instant::now();
            l.acquire().await;
            assert!(start.elapsed() < Duration::from_millis(10));
        }
        let l = RateLimiter::new(&[Bucket {
            capacity: 2.0,
            refill_per_sec: 1.0,
        }]);
        l.report(100_000, 100_000);
        let start = Instant::now();
        for _ in 0..3 {
            l.acquire().await;
        }
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "its own bucket still applies"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_every_caller() {
        let l = RateLimiter::hetzner();
        let start = Instant::now();
        l.pause_until(start + Duration::from_secs(7));
        l.acquire().await;
        assert!(start.elapsed() >= Duration::from_secs(7));
    }
}
