//! Retrying transient provider failures inside a provision: capped, full-jitter backoff
//! that honours the provider's `Retry-After`, paced by a retry budget per credential
//! (shared by every provision acting with it, so a storm at the provider is not answered
//! with a storm of retries) and bounded by a budget per provision.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::app::RetryTuning;
use levelrail_types::ProviderId;

/// A token bucket of retries for one credential. Taking a token waits for the refill when
/// the bucket is empty, so retries across all provisions stay under the refill rate.
#[derive(Debug)]
pub(crate) struct RetryBudget {
    state: Mutex<(f64, Instant)>,
    burst: f64,
    refill: f64,
}

impl RetryBudget {
    /// A full bucket.
    pub(crate) fn new(burst: u32, refill_per_sec: f64) -> Self {
        let burst = f64::from(burst.max(1));
        RetryBudget {
            state: Mutex::new((burst, Instant::now())),
            burst,
            refill: refill_per_sec.max(0.001),
        }
    }

    /// Takes one retry, waiting until the bucket holds one.
    pub(crate) async fn take(&self) {
        loop {
            let wait = {
                let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let (tokens, at) = &mut *guard;
                let now = Instant::now();
                *tokens = (*tokens + (now - *at).as_secs_f64() * self.refill).min(self.burst);
                *at = now;
                if *tokens >= 1.0 {
                    *tokens -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - *tokens) / self.refill)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// The retry budgets of every credential this process acts with.
#[derive(Debug, Default)]
pub(crate) struct RetryBudgets {
    budgets: Mutex<HashMap<(ProviderId, String), Arc<RetryBudget>>>,
}

impl RetryBudgets {
    /// The budget of `credential` at `provider` (made on first use).
    pub(crate) fn of(
        &self,
        provider: ProviderId,
        credential: &str,
        tuning: &RetryTuning,
    ) -> Arc<RetryBudget> {
        let mut map = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
        let budget = map
            .entry((provider, credential.to_owned()))
            .or_insert_with(|| {
                Arc::new(RetryBudget::new(
                    tuning.per_credential_burst,
                    tuning.per_credential_refill,
                ))
            });
        Arc::clone(budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_stays_under_its_ceiling_and_honours_retry_after_up_to_the_cap() {
        let t = RetryTuning::default();
        for retry in 1..40 {
            assert!(t.pause(retry, None) <= t.max);
        }
        assert_eq!(
            t.pause(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            t.pause(1, Some(Duration::from_secs(3600))),
            t.max_retry_after
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_budget_paces_retries_at_its_refill_rate() {
        let budget = RetryBudget::new(5, 2.0);
        let start = Instant::now();
        for _ in 0..25 {
            budget.take().await;
        }
        // 5 from the burst, then 20 at 2 per second.
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(10) && took < Duration::from_millis(10_100),
            "{took:?}"
        );
    }
}
