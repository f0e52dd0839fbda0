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
    tokens: Vec<f64>,
    last: Instant,
    paused_until: Option<Instant>,
}

/// A limiter shared by every request made with one credential.
#[derive(Debug)]
pub struct RateLimiter {
    buckets: Vec<Bucket>,
    state: Mutex<State>,
}

impl RateLimiter {
    /// A limiter enforcing every bucket at once (all must have a token).
    pub fn new(buckets: &[Bucket]) -> Self {
        Self {
            buckets: buckets.to_vec(),
            state: Mutex::new(State {
                tokens: buckets.iter().map(|b| b.capacity).collect(),
                last: Instant::now(),
                paused_until: None,
            }),
        }
    }

    /// Hetzner Cloud: 3,600 requests per hour per project, refilling one per second.
    pub fn hetzner() -> Self {
        Self::new(&[Bucket {
            capacity: 3600.0,
            refill_per_sec: 1.0,
        }])
    }

    /// DigitalOcean: 250 per minute and 5,000 per hour.
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
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        s.last = now;
        let mut wait = 0f64;
        for (b, t) in self.buckets.iter().zip(s.tokens.iter_mut()) {
            *t = (*t + elapsed * b.refill_per_sec).min(b.capacity);
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
    async fn a_pause_holds_every_caller() {
        let l = RateLimiter::hetzner();
        let start = Instant::now();
        l.pause_until(start + Duration::from_secs(7));
        l.acquire().await;
        assert!(start.elapsed() >= Duration::from_secs(7));
    }
}
