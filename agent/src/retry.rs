//! Exponential backoff with full jitter (start 500 ms, cap 30 s) and an optional deadline.

use std::time::Duration;

use rand::Rng as _;
use tokio::time::Instant;

use crate::exit::AgentError;

const BASE: Duration = Duration::from_millis(500);
const CAP: Duration = Duration::from_secs(30);

/// The outcome of one failed attempt at talking to the control plane.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Stop: this error ends the process.
    Fatal(AgentError),
    /// Worth another try; the text says what went wrong (no secret).
    Retry(String),
}

/// Retry pacing: each wait is uniform in `[0, min(cap, base * 2^attempt)]`.
#[derive(Debug)]
pub(crate) struct Backoff {
    attempt: u32,
    deadline: Option<Instant>,
}

impl Backoff {
    /// Backoff that gives up once `budget` has elapsed from now.
    pub(crate) fn with_budget(budget: Duration) -> Self {
        Self {
            attempt: 0,
            deadline: Some(Instant::now() + budget),
        }
    }

    /// Backoff that never gives up.
    pub(crate) fn unlimited() -> Self {
        Self {
            attempt: 0,
            deadline: None,
        }
    }

    /// Back to the first, shortest delay (after a success).
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Time left before the deadline (`None`: no deadline).
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The next delay, or `None` when the budget is spent.
    pub(crate) fn next_delay(&mut self) -> Option<Duration> {
        let ceiling = BASE.saturating_mul(1u32 << self.attempt.min(16)).min(CAP);
        self.attempt = self.attempt.saturating_add(1);
        let jittered = rand::thread_rng().gen_range(Duration::ZERO..=ceiling);
        match self.remaining() {
            None => Some(jittered),
            Some(left) if left.is_zero() => None,
            Some(left) => Some(jittered.min(left)),
        }
    }

    /// Sleeps for the next delay; `false` (without sleeping) when the budget is spent.
    pub(crate) async fn wait(&mut self) -> bool {
        match self.next_delay() {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_exponentially_up_to_the_cap_with_full_jitter() {
        let mut backoff = Backoff::unlimited();
        for attempt in 0..20u32 {
            let ceiling = (BASE * 2u32.pow(attempt.min(10))).min(CAP);
            let delay = backoff.next_delay().unwrap();
            assert!(
                delay <= ceiling,
                "attempt {attempt}: {delay:?} > {ceiling:?}"
            );
        }
        backoff.reset();
        assert!(backoff.next_delay().unwrap() <= BASE);
    }

    #[tokio::test]
    async fn a_spent_budget_stops_the_retries() {
        let budget = Duration::from_millis(300);
        let mut backoff = Backoff::with_budget(budget);
        let start = Instant::now();
        while backoff.wait().await {}
        let spent = start.elapsed();
        assert!(
            spent >= budget && spent < budget + Duration::from_millis(200),
            "{spent:?}"
        );
        assert_eq!(backoff.remaining(), Some(Duration::ZERO));
    }
}
