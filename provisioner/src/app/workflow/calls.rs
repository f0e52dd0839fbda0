//! Provider calls of a driver: each with a grant still valid for the call (a new one is
//! issued when the cached grant nears its expiry), one refresh when the provider refuses
//! the grant anyway (401, an expired token or session), and transient failures (rate
//! limits, 5xx, timeouts) retried with capped backoff within the retry budgets.
use std::future::Future;
use std::sync::Arc;

use tracing::{info, warn};

use super::driver::Driver;
use super::events::Stop;
use levelrail_clouds::{CloudProvider, ProviderError};

impl Driver {
    /// A client whose grant stays valid for at least the configured margin: the cached
    /// one, or one built on a grant the broker issues now.
    pub(super) async fn client(&mut self) -> Result<Arc<dyn CloudProvider>, ProviderError> {
        let now = self.cx().now();
        let margin = self.cx().config.tuning.grant_margin;
        if let Some(leased) = self.client.as_ref().filter(|c| c.valid_for(now, margin)) {
            return Ok(Arc::clone(&leased.client));
        }
        let provider = self.record.provider;
        let purpose = format!("provision {}", self.record.id);
        let leased = self
            .cx()
            .registry
            .lease(provider, &purpose)
            .await
            .map_err(|e| e.into_provider_error(provider))?;
        let client = Arc::clone(&leased.client);
        self.client = Some(leased);
        Ok(client)
    }

    /// Replaces the client with one on a grant issued now (not a cached one).
    async fn refresh_client(&mut self) -> Result<(), ProviderError> {
        let provider = self.record.provider;
        let purpose = format!("provision {} (refresh)", self.record.id);
        let leased = self
            .cx()
            .registry
            .lease_fresh(provider, &purpose)
            .await
            .map_err(|e| e.into_provider_error(provider))?;
        self.client = Some(leased);
        Ok(())
    }

    /// Runs `call` until it succeeds or fails for good: a refused grant is replaced once,
    /// transient failures are retried (capped, jittered backoff honouring `Retry-After`,
    /// paced by the credential's budget, bounded by the provision's). Once a cancel is
    /// signalled nothing is retried; the call in flight still finishes.
    pub(super) async fn call<T, F, Fut>(
        &mut self,
        what: &'static str,
        call: F,
    ) -> Result<T, ProviderError>
    where
        F: Fn(Arc<dyn CloudProvider>) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        self.call_with(what, true, call).await
    }

    /// Like [`Self::call`], but a transient failure is returned at once (with the grant
    /// refresh still done): for polls, whose own loop waits and asks again.
    pub(super) async fn call_once<T, F, Fut>(
        &mut self,
        what: &'static str,
        call: F,
    ) -> Result<T, ProviderError>
    where
        F: Fn(Arc<dyn CloudProvider>) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        self.call_with(what, false, call).await
    }

    async fn call_with<T, F, Fut>(
        &mut self,
        what: &'static str,
        retry_transient: bool,
        call: F,
    ) -> Result<T, ProviderError>
    where
        F: Fn(Arc<dyn CloudProvider>) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let tuning = self.cx().config.tuning.retry.clone();
        let mut refreshed = false;
        let mut retry = 0u32;
        let mut last: Option<ProviderError> = None;
        loop {
            if let Some(e) = last.take()
                && (*self.stop.borrow() == Stop::Cancel || self.remaining().is_zero())
            {
                // A cancel or the deadline arrived during the pause: no further call.
                return Err(e);
            }
            let outcome = match self.client().await {
                Ok(client) => call(client).await,
                Err(e) => Err(e),
            };
            let e = match outcome {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            if e.is_grant_refused() && !refreshed {
                refreshed = true;
                self.refresh_client().await?;
                info!(provision = %self.record.id, what, error = %e, "the provider refused the grant; retrying with a fresh one");
                continue;
            }
            self.last_poll_code = Some(code_of(&e));
            if !retry_transient || !e.is_transient() || *self.stop.borrow() == Stop::Cancel {
                return Err(e);
            }
            if self.retries >= tuning.per_provision {
                warn!(provision = %self.record.id, what, retries = self.retries, error = %e, "the provision's retry budget is spent");
                return Err(e);
            }
            self.retries += 1;
            retry += 1;
            let spent = self.retries;
            if let Err(halt) = self.commit(move |r| r.saga.retries = spent).await {
                warn!(provision = %self.record.id, ?halt, "could not record the retry count");
            }
            let pause = tuning.pause(retry, e.retry_after);
            warn!(provision = %self.record.id, what, retry, pause_ms = pause.as_millis() as u64, error = %e, "transient provider failure; retrying");
            let credential = self
                .client
                .as_ref()
                .map(|c| c.credential_id.clone())
                .unwrap_or_default();
            let budget = self
                .cx()
                .budgets
                .of(self.record.provider, &credential, &tuning);
            budget.take().await;
            tokio::time::sleep(pause).await;
            last = Some(e);
        }
    }
}

/// The provider's code of `e`, or its kind when it gave none.
pub(super) fn code_of(e: &ProviderError) -> String {
    if e.code.is_empty() {
        e.kind.as_str().to_owned()
    } else {
        e.code.clone()
    }
}
