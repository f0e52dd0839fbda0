//! Client-side rate limiting: one limiter per credential, made of token buckets sized to the
//! provider's published limits (and, where the provider reports it, to the limit and count
//! its answers state), plus a shared pause when the provider answers 429. Built on
//! `tokio::time`, so tests can run it on a paused (scaled) clock.
use std::collections::VecDeque;
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
    /// When the request whose answer last resized the reported bucket was sent: answers
    /// to requests sent before it speak of the old limit.
    resized_by: Option<Instant>,
    /// When each recent token was taken (oldest first), where the provider reports a count:
    /// an answer's count does not include this client's requests sent after it.
    taken: VecDeque<Instant>,
}

/// How long a token's taking is remembered: longer than any request waits for its answer.
const TAKEN_KEPT: Duration = Duration::from_secs(120);
/// The most takings remembered (a burst of a resized bucket could be far larger).
const TAKEN_MAX: usize = 10_000;

/// The bucket a provider reports on, and its published size.
#[derive(Debug, Clone, Copy)]
struct Reported {
    index: usize,
    published: f64,
}

/// A limiter shared by every request made with one credential.
#[derive(Debug)]
pub struct RateLimiter {
    /// The bucket the provider's `RateLimit-Limit` / `RateLimit-Remaining` headers describe
    /// (an hourly budget), if it sends them.
    reported: Option<Reported>,
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
                resized_by: None,
                taken: VecDeque::new(),
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
        let published = self.lock().buckets[index].capacity;
        self.reported = Some(Reported { index, published });
        self
    }

    /// What the answer to a request sent at `sent` said of the hourly budget: `limit`
    /// requests per hour, `remaining` left when the provider counted that request. The
    /// provider has earned back since then at most what the time since `sent` refills, and
    /// this client's requests sent after it (their tokens taken, some still in flight) are
    /// not in that count yet, so the bucket keeps at most the count, plus what refilled,
    /// less those requests, and no less than none (other clients of the same project spend
    /// the same budget). A limit other than the bucket's (a project whose limit was raised
    /// or lowered) resizes the bucket, and answers to requests sent before then are ignored.
    /// A limit outside 1/100 to 100 times the published one is not believed (a proxy's or a
    /// broken header: it would stall the client for an hour per request, or unpace it), nor
    /// is anything a limiter without a reported bucket is told.
    pub fn report(&self, sent: Instant, limit: u64, remaining: u64) {
        let Some(Reported {
            index: i,
            published,
        }) = self.reported
        else {
            return;
        };
        let (limit, remaining) = (limit as f64, remaining as f64);
        if !(published / 100.0..=published * 100.0).contains(&limit) {
            return;
        }
        let now = Instant::now();
        let mut s = self.lock();
        if s.resized_by.is_some_and(|t| sent < t) {
            return;
        }
        s.refill(now);
        let age = now.saturating_duration_since(sent).as_secs_f64();
        // A resized bucket holds what the provider says; otherwise no more than before.
        let held = if (s.buckets[i].capacity - limit).abs() >= 1.0 {
            s.buckets[i] = Bucket {
                capacity: limit,
                refill_per_sec: limit / 3600.0,
            };
            s.resized_by = Some(sent);
            limit
        } else {
            s.tokens[i]
        };
        let earned = age * s.buckets[i].refill_per_sec;
        // Taken in order, so the ones after `sent` are the tail.
        let sent_since = (s.taken.len() - s.taken.partition_point(|t| *t <= sent)) as f64;
        s.tokens[i] = held
            .min((remaining + earned - sent_since).max(0.0))
            .min(limit);
    }

    /// No limit (tests of other behaviour).
    pub fn unlimited() -> Self {
        Self::new(&[])
    }

    /// Waits until a request may be sent, then takes a token from every bucket.
    pub async fn acquire(&self) {
        loop {
            let wait = self.try_take();
            match wait {
                None => return,
                Some(d) => tokio::time::sleep(d).await,
            }
        }
    }

    /// The time the provider takes to earn one request back (one second at 3,600 an hour),
    /// when the bucket it reports on is the limiter's only one (its answers then say all
    /// there is to know of its limit); `None` for other limiters. A refusal is waited out
    /// this long from its answer: by then the provider has a request to give whenever it
    /// counted the refused one.
    pub fn request_interval(&self) -> Option<Duration> {
        let Reported { index, .. } = self.reported?;
        let s = self.lock();
        (s.buckets.len() == 1)
            .then(|| Duration::from_secs_f64(1.0 / s.buckets[index].refill_per_sec))
    }

    /// Makes every caller wait until `until` (a 429 answer: the provider's limit is shared
    /// by every request with this credential, also with other tools). The shortest-window
    /// bucket is drained so the burst does not resume at once; where there are longer
    /// windows (DigitalOcean's hour beside its minute), they keep their tokens unless the
    /// answer reported fewer left (see [`RateLimiter::report`]), so one 429 does not slow
    /// the client to the hourly rate for an hour.
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
    fn try_take(&self) -> Option<Duration> {
        let mut s = self.lock();
        // Read under the lock, so the takings are recorded in order.
        let now = Instant::now();
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
        if self.reported.is_some() {
            while s.taken.len() >= TAKEN_MAX
                || s.taken
                    .front()
                    .is_some_and(|t| now.duration_since(*t) > TAKEN_KEPT)
            {
                s.taken.pop_front();
            }
            s.taken.push_back(now);
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
        l.report(Instant::now(), 36_000, 35_999);
        let start = Instant::now();
        for _ in 0..20_000 {
            l.acquire().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(10),
            "a raised limit is a larger burst"
        );
        // Lowered again: the provider's count is taken, then its refill rate.
        l.report(Instant::now(), 720, 1);
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
    async fn an_answer_to_a_request_sent_before_a_resize_is_ignored() {
        let l = RateLimiter::hetzner();
        let before = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        l.report(Instant::now(), 720, 0);
        // Sent before the answer that resized, answered after it: the old limit, ignored.
        l.report(before, 3600, 3599);
        let start = Instant::now();
        l.acquire().await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_secs(4) && e < Duration::from_secs(6),
            "still 720/h with none left: {e:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lower_remaining_count_is_kept_and_a_higher_one_ignored() {
        let l = RateLimiter::hetzner();
        // Another client of the project spent most of the budget.
        l.report(Instant::now(), 3600, 3);
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
        l.report(Instant::now(), 3600, 3600);
        let start = Instant::now();
        l.acquire().await;
        assert!(
            start.elapsed() >= Duration::from_millis(900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_count_is_credited_with_what_refilled_while_its_answer_travelled() {
        let l = RateLimiter::hetzner();
        l.report(Instant::now(), 3600, 0);
        l.acquire().await;
        // Sent at once, answered 0.9 s later with none left: the provider has earned 0.9
        // of a request back since, so the next one waits 0.1 s, not a whole second.
        let sent = Instant::now();
        tokio::time::sleep(Duration::from_millis(900)).await;
        l.report(sent, 3600, 0);
        let start = Instant::now();
        l.acquire().await;
        let e = start.elapsed();
        assert!(
            e >= Duration::from_millis(90) && e < Duration::from_millis(200),
            "{e:?}"
        );
        assert_eq!(l.request_interval(), Some(Duration::from_secs(1)));
    }

    /// A request sent now, then 5 more sent 1 ms later while its answer travels: when the
    /// first was sent.
    async fn sent_then_five_more(l: &RateLimiter) -> Instant {
        let sent = Instant::now();
        tokio::time::sleep(Duration::from_millis(1)).await;
        for _ in 0..5 {
            l.acquire().await;
        }
        sent
    }

    #[tokio::test(start_paused = true)]
    async fn a_count_does_not_include_the_requests_sent_after_the_one_it_answers() {
        let l = RateLimiter::hetzner();
        // Its answer says 10 were left.
        let sent = sent_then_five_more(&l).await;
        l.report(sent, 3600, 10);
        // The provider has counted those 5 by now, or will: 5 are left, not 10.
        let start = Instant::now();
        for _ in 0..5 {
            l.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(10));
        l.acquire().await;
        assert!(
            start.elapsed() >= Duration::from_millis(900),
            "the sixth waits for a refill: {:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_count_below_the_requests_sent_since_leaves_none_not_a_debt() {
        let l = RateLimiter::hetzner();
        let sent = sent_then_five_more(&l).await;
        // None left, and the provider already counted the 5 sent since (they arrived
        // first): the bucket holds none, not minus 5.
        l.report(sent, 3600, 0);
        let start = Instant::now();
        l.acquire().await;
        let e = start.elapsed();
        assert!(
            e < Duration::from_millis(1100),
            "waited {e:?}, a debt of 5 s"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn limits_far_from_the_published_one_and_unreported_buckets_are_not_believed() {
        for (limit, remaining) in [(0, 0), (1, 0), (35, 0), (360_001, 360_001)] {
            let l = RateLimiter::hetzner();
            l.report(Instant::now(), limit, remaining);
            let start = Instant::now();
            for _ in 0..3600 {
                l.acquire().await;
            }
            assert!(start.elapsed() < Duration::from_millis(10), "{limit}");
            l.acquire().await;
            assert!(start.elapsed() >= Duration::from_millis(900), "{limit}");
        }
        let l = RateLimiter::new(&[Bucket {
            capacity: 2.0,
            refill_per_sec: 1.0,
        }]);
        l.report(Instant::now(), 100_000, 100_000);
        let start = Instant::now();
        for _ in 0..3 {
            l.acquire().await;
        }
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "its own bucket still applies"
        );
        assert_eq!(l.request_interval(), None);
        // DigitalOcean reports its hour, but also limits the minute: not its only limit.
        let l = RateLimiter::digitalocean();
        l.report(Instant::now(), 5000, 0);
        assert_eq!(l.request_interval(), None);
        let l = RateLimiter::hetzner();
        l.report(Instant::now(), 36_000, 0);
        let interval = l
            .request_interval()
            .expect("Hetzner's reported limit is its only one");
        assert!(
            interval.abs_diff(Duration::from_millis(100)) < Duration::from_micros(1),
            "{interval:?}"
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
