//! The ARM client: the shared `ApiClient` (bearer auth, limiter, retries) plus api-versions,
//! `nextLink` paging and long-running operations. A PUT or DELETE answered 201/202 is
//! followed to completion through `Azure-AsyncOperation` (preferred) or `Location`, waiting
//! `Retry-After` between polls; a PUT answered without either header but with a
//! non-terminal `provisioningState` is polled on the resource itself. Poll and paging URLs
//! must stay on the API's own origin, so a tampered answer cannot send the token elsewhere.
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, Url};
use secrecy::SecretString;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::debug;

use super::errors::{self, Body, classify};
use crate::http::{ApiClient, ApiResponse, RetryPolicy};
use crate::ratelimit::RateLimiter;
use crate::{ErrorKind, ProviderError, ProviderId};

const AZ: ProviderId = ProviderId::Azure;
/// The longest a long-running operation is followed.
const LRO_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// The longest pause between two polls, whatever `Retry-After` says.
const MAX_POLL: Duration = Duration::from_secs(60);
/// The pause when the answer names none.
const DEFAULT_POLL: Duration = Duration::from_secs(5);
/// A list longer than this many pages is treated as a paging loop.
const MAX_PAGES: usize = 200;

/// One credential's view of ARM.
#[derive(Debug)]
pub(super) struct Arm {
    http: ApiClient,
    base: Url,
    min_poll: Duration,
}

impl Arm {
    pub(super) fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let base = Url::parse(base_url).map_err(|_| {
            other(
                "bad_base_url",
                "the Azure Resource Manager URL is not a URL",
            )
        })?;
        let min_poll = policy.base_backoff.min(Duration::from_secs(2));
        let http = ApiClient::with_extra_root(
            AZ,
            base_url,
            token,
            limiter,
            policy,
            classify,
            extra_root_pem,
        )?;
        Ok(Self {
            http,
            base,
            min_poll,
        })
    }

    /// GET `path` at `api_version` and parse it.
    pub(super) async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        api_version: &str,
    ) -> Result<T, ProviderError> {
        self.http.get_json(&versioned(path, api_version)).await
    }

    /// Like [`Arm::get`], `None` on 404.
    pub(super) async fn find<T: DeserializeOwned>(
        &self,
        path: &str,
        api_version: &str,
    ) -> Result<Option<T>, ProviderError> {
        match self.get(path, api_version).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every item of a list, following `nextLink`.
    pub(super) async fn list<T: DeserializeOwned>(
        &self,
        path: &str,
        api_version: &str,
    ) -> Result<Vec<T>, ProviderError> {
        #[derive(serde::Deserialize)]
        struct Page<T> {
            #[serde(default = "Vec::new")]
            value: Vec<T>,
            #[serde(default, rename = "nextLink")]
            next_link: Option<String>,
        }
        let mut out = Vec::new();
        let mut next = versioned(path, api_version);
        for _ in 0..MAX_PAGES {
            let page: Page<T> = self.http.get_json(&next).await?;
            out.extend(page.value);
            match page.next_link.filter(|l| !l.is_empty()) {
                Some(link) => next = self.same_origin(&link)?,
                None => return Ok(out),
            }
        }
        Err(other("paging_loop", "the list never ended"))
    }

    /// PUT `body` (idempotent in ARM: retried) and follow the operation to completion;
    /// returns the resource as it is then.
    pub(super) async fn put(
        &self,
        path: &str,
        api_version: &str,
        body: &Value,
    ) -> Result<Value, ProviderError> {
        let url = versioned(path, api_version);
        let resp = self.http.send(Method::PUT, &url, Some(body), true).await?;
        let header_driven = async_url(&resp).is_some();
        self.follow(&resp).await?;
        let mut resource: Value = if header_driven || resp.body.is_empty() {
            self.http.get_json(&url).await?
        } else {
            resp.json(AZ)?
        };
        let deadline = tokio::time::Instant::now() + LRO_DEADLINE;
        while !terminal(provisioning_state(&resource)) {
            if tokio::time::Instant::now() > deadline {
                return Err(timed_out());
            }
            tokio::time::sleep(self.pause(None)).await;
            resource = self.http.get_json(&url).await?;
        }
        if provisioning_state(&resource) != "Succeeded" {
            return Err(ProviderError::new(
                AZ,
                ErrorKind::Other,
                "provisioning_failed",
                &format!(
                    "the resource ended in provisioning state {}",
                    provisioning_state(&resource)
                ),
            ));
        }
        Ok(resource)
    }

    /// DELETE and follow the operation to completion. `Ok(false)` when it was already gone.
    pub(super) async fn delete(
        &self,
        path: &str,
        api_version: &str,
    ) -> Result<bool, ProviderError> {
        match self
            .http
            .send(Method::DELETE, &versioned(path, api_version), None, true)
            .await
        {
            Ok(resp) if resp.status == 204 => Ok(false),
            Ok(resp) => self.follow(&resp).await.map(|()| true),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Polls the operation `resp` started (if any) until it ends; its failure is an error.
    async fn follow(&self, resp: &ApiResponse) -> Result<(), ProviderError> {
        if !matches!(resp.status, 201 | 202) {
            return Ok(());
        }
        let Some((url, by_status)) = async_url(resp) else {
            return Ok(());
        };
        let url = self.same_origin(&url)?;
        let deadline = tokio::time::Instant::now() + LRO_DEADLINE;
        let mut wait = self.pause(retry_after(resp));
        loop {
            if tokio::time::Instant::now() > deadline {
                return Err(timed_out());
            }
            tokio::time::sleep(wait).await;
            let poll = self.http.send(Method::GET, &url, None, true).await?;
            wait = self.pause(retry_after(&poll));
            if !by_status {
                // `Location`: 202 while running, then the final answer.
                if poll.status != 202 {
                    return Ok(());
                }
                continue;
            }
            let op: Operation = poll.json(AZ)?;
            debug!(status = %op.status, "long-running operation polled");
            match op.status.as_str() {
                "Succeeded" => return Ok(()),
                "Failed" | "Canceled" => {
                    let e = op.error.unwrap_or_default();
                    let code = if e.code.is_empty() {
                        format!("operation_{}", op.status.to_lowercase())
                    } else {
                        e.code
                    };
                    let message = if e.message.is_empty() {
                        format!("the operation ended {}", op.status)
                    } else {
                        e.message
                    };
                    return Err(ProviderError::new(
                        AZ,
                        errors::kind_of_operation(&code),
                        code,
                        &message,
                    ));
                }
                _ => {}
            }
        }
    }

    fn pause(&self, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or(DEFAULT_POLL)
            .clamp(self.min_poll, MAX_POLL)
    }

    /// `link` when it has the base URL's scheme, host and port.
    fn same_origin(&self, link: &str) -> Result<String, ProviderError> {
        let url = Url::parse(link)
            .map_err(|_| other("unexpected_response", "a link in the answer is not a URL"))?;
        if url.origin() != self.base.origin() {
            return Err(other(
                "unexpected_response",
                "a link in the answer points outside Azure Resource Manager",
            ));
        }
        Ok(url.to_string())
    }
}

#[derive(serde::Deserialize)]
struct Operation {
    #[serde(default)]
    status: String,
    #[serde(default)]
    error: Option<Body>,
}

/// The operation URL and whether it reports a `status` (`Azure-AsyncOperation`) rather than
/// answering 202 until done (`Location`).
fn async_url(resp: &ApiResponse) -> Option<(String, bool)> {
    let header = |name: &str| {
        resp.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    header("azure-asyncoperation")
        .map(|u| (u, true))
        .or_else(|| header("location").map(|u| (u, false)))
}

fn retry_after(resp: &ApiResponse) -> Option<Duration> {
    let v = resp.headers.get("retry-after")?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// `properties.provisioningState`, `Succeeded` when absent (ARM: no value means done).
pub(super) fn provisioning_state(resource: &Value) -> &str {
    resource
        .pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("Succeeded")
}

fn terminal(state: &str) -> bool {
    matches!(state, "Succeeded" | "Failed" | "Canceled")
}

/// `path?api-version=…` (or `&api-version=…` after an existing query).
pub(super) fn versioned(path: &str, api_version: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}api-version={api_version}")
}

fn timed_out() -> ProviderError {
    ProviderError::new(
        AZ,
        ErrorKind::Unavailable,
        "operation_timeout",
        "a long-running Azure operation did not finish in 30 minutes",
    )
}

pub(super) fn other(code: &str, message: &str) -> ProviderError {
    ProviderError::new(AZ, ErrorKind::Other, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_are_appended_to_any_query() {
        assert_eq!(versioned("/a", "2024-07-01"), "/a?api-version=2024-07-01");
        assert_eq!(versioned("/a?$expand=x", "1"), "/a?$expand=x&api-version=1");
    }

    #[test]
    fn a_missing_provisioning_state_means_done() {
        assert_eq!(provisioning_state(&serde_json::json!({})), "Succeeded");
        assert_eq!(
            provisioning_state(
                &serde_json::json!({"properties": {"provisioningState": "Updating"}})
            ),
            "Updating"
        );
        assert!(!terminal("Creating") && terminal("Canceled"));
    }
}
