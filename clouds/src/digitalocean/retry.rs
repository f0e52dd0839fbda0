//! "Find then create" for a cloud without idempotency tokens: after an ambiguous failure the
//! resource is looked for before any retry, with full-jitter backoff between attempts. A leaf
//! that `create`, `keys` and `cleanup` all use, so none of them imports another for it.
use std::future::Future;
use std::time::Duration;

use rand::Rng as _;
use tracing::debug;

use crate::http::RetryPolicy;
use crate::{ErrorKind, ProviderError, Reason};

/// Runs `create`; after an ambiguous failure (the request may have been processed) waits,
/// runs `find`, adopts what it finds, and only otherwise tries again. The caller has just
/// run `find` before calling this.
pub(super) async fn retry_create<T, F, FF, C, CF>(
    policy: &RetryPolicy,
    find: F,
    create: C,
) -> Result<T, ProviderError>
where
    F: Fn() -> FF,
    FF: Future<Output = Result<Option<T>, ProviderError>>,
    C: Fn() -> CF,
    CF: Future<Output = Result<T, ProviderError>>,
{
    let mut attempt = 1u32;
    loop {
        match create().await {
            Ok(created) => return Ok(created),
            Err(e) if is_ambiguous(&e) && attempt < policy.max_attempts => {
                debug!(error = %e, attempt, "create outcome unknown; listing before any retry");
                // A floor of one base backoff gives a create that did go through time to show
                // up in the listing; full jitter above it spreads concurrent retries.
                tokio::time::sleep(policy.base_backoff).await;
                backoff(policy, attempt).await;
                if let Some(found) = find().await? {
                    return Ok(found);
                }
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The request may or may not have been processed: a transport failure, a 5xx or an
/// answer that was cut short.
fn is_ambiguous(e: &ProviderError) -> bool {
    e.kind == ErrorKind::Unavailable || e.reason == Reason::UnexpectedResponse
}

/// Full-jitter backoff: a random delay below `base_backoff · 2^(attempt-1)`, capped.
pub(super) async fn backoff(policy: &RetryPolicy, attempt: u32) {
    let ceiling = policy
        .base_backoff
        .saturating_mul(1u32 << attempt.clamp(1, 16).saturating_sub(1))
        .min(policy.max_backoff);
    let ms = rand::thread_rng().gen_range(0..=ceiling.as_millis().max(1) as u64);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
