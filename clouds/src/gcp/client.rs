//! The Compute Engine client: the shared `ApiClient` (bearer auth, limiter, retries) plus
//! `pageToken` paging, inserts and deletes carrying a `requestId` (so a retried call is
//! deduplicated by Google for an hour), and operations followed with `operations.wait`
//! until `DONE`; a failed operation becomes a classified error.
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use secrecy::SecretString;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tracing::debug;

use super::errors::{classify, operation_kind};
use crate::http::{ApiClient, RetryPolicy};
use crate::ratelimit::RateLimiter;
use crate::{ErrorKind, ProviderError, ProviderId};

const GCP: ProviderId = ProviderId::Gcp;
/// The longest an operation is followed.
const OPERATION_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// The timeout of `operations.wait` calls (Google answers within about two minutes).
const WAIT_TIMEOUT: Duration = Duration::from_secs(150);
/// A list longer than this many pages is treated as a paging loop.
const MAX_PAGES: usize = 200;

/// One credential's view of Compute Engine in one project.
#[derive(Debug)]
pub(super) struct Compute {
    http: ApiClient,
    /// The same API with a timeout longer than `operations.wait` blocks.
    waiter: ApiClient,
    /// `projects/<project>`.
    project: String,
}

/// A Compute operation (the parts read).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Operation {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) zone: String,
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) error: Option<OperationErrors>,
    #[serde(default)]
    pub(super) http_error_status_code: Option<u16>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct OperationErrors {
    #[serde(default)]
    pub(super) errors: Vec<OperationError>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct OperationError {
    #[serde(default)]
    pub(super) code: String,
    #[serde(default)]
    pub(super) message: String,
}

impl Compute {
    pub(super) fn new(
        base_url: &str,
        project: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        // `operations.wait` answers when the operation is done or near its 2-minute
        // deadline: its client waits longer than that.
        let wait_policy = RetryPolicy {
            timeout: policy.timeout.max(WAIT_TIMEOUT),
            ..policy.clone()
        };
        let waiter = ApiClient::with_extra_root(
            GCP,
            base_url,
            token.clone(),
            limiter.clone(),
            wait_policy,
            classify,
            extra_root_pem,
        )?;
        let http = ApiClient::with_extra_root(
            GCP,
            base_url,
            token,
            limiter,
            policy,
            classify,
            extra_root_pem,
        )?;
        Ok(Self {
            http,
            waiter,
            project: format!("projects/{project}"),
        })
    }

    /// `projects/<project>/<rest>`.
    pub(super) fn path(&self, rest: &str) -> String {
        if rest.is_empty() {
            self.project.clone()
        } else {
            format!("{}/{rest}", self.project)
        }
    }

    /// GET and parse (relative to the project).
    pub(super) async fn get<T: DeserializeOwned>(&self, rest: &str) -> Result<T, ProviderError> {
        self.http.get_json(&self.path(rest)).await
    }

    /// Like [`Compute::get`], `None` on 404.
    pub(super) async fn find<T: DeserializeOwned>(
        &self,
        rest: &str,
    ) -> Result<Option<T>, ProviderError> {
        match self.get(rest).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every page of a list (`rest` may carry a query), as raw pages.
    pub(super) async fn pages(&self, rest: &str) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let sep = if rest.contains('?') { '&' } else { '?' };
        for _ in 0..MAX_PAGES {
            let url = match &token {
                Some(t) => format!("{rest}{sep}maxResults=500&pageToken={}", encode(t)),
                None => format!("{rest}{sep}maxResults=500"),
            };
            let page: Value = self.get(&url).await?;
            token = page
                .get("nextPageToken")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            out.push(page);
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(ProviderError::new(
            GCP,
            ErrorKind::Other,
            "paging_loop",
            "the list never ended",
        ))
    }

    /// Every `items` entry of a list.
    pub(super) async fn items<T: DeserializeOwned>(
        &self,
        rest: &str,
    ) -> Result<Vec<T>, ProviderError> {
        let mut out = Vec::new();
        for mut page in self.pages(rest).await? {
            if let Some(items) = page.get_mut("items").map(Value::take) {
                out.extend(
                    serde_json::from_value::<Vec<T>>(items)
                        .map_err(|e| unexpected(&e.to_string()))?,
                );
            }
        }
        Ok(out)
    }

    /// Sends `method` on `rest` with `requestId`, then follows the operation to `DONE`.
    /// Safe to retry: Google deduplicates by request id.
    pub(super) async fn mutate(
        &self,
        method: Method,
        rest: &str,
        body: Option<&Value>,
        request_id: &str,
    ) -> Result<Operation, ProviderError> {
        let sep = if rest.contains('?') { '&' } else { '?' };
        let url = format!("{}{sep}requestId={request_id}", self.path(rest));
        let op: Operation = self.http.send(method, &url, body, true).await?.json(GCP)?;
        self.wait(op).await
    }

    /// Waits for `op` with `operations.wait` (which answers when done or after about two
    /// minutes) until `DONE`; a failed operation is an error.
    pub(super) async fn wait(&self, mut op: Operation) -> Result<Operation, ProviderError> {
        let deadline = tokio::time::Instant::now() + OPERATION_DEADLINE;
        while op.status != "DONE" {
            if tokio::time::Instant::now() > deadline {
                return Err(ProviderError::new(
                    GCP,
                    ErrorKind::Unavailable,
                    "operation_timeout",
                    "a Compute operation did not finish in 30 minutes",
                ));
            }
            if op.name.is_empty() {
                return Err(unexpected("an operation without a name"));
            }
            let scope = match op.zone.rsplit('/').next().filter(|z| !z.is_empty()) {
                Some(zone) => format!("zones/{zone}/operations/{}/wait", op.name),
                None => format!("global/operations/{}/wait", op.name),
            };
            op = self
                .waiter
                .send(Method::POST, &self.path(&scope), None, true)
                .await?
                .json(GCP)?;
            debug!(operation = %op.name, status = %op.status, "operation waited on");
        }
        match op.error.as_ref().and_then(|e| e.errors.first()) {
            None => Ok(op),
            Some(e) => {
                let kind = operation_kind(&e.code);
                let code = if e.code.is_empty() {
                    "operation_failed".to_owned()
                } else {
                    e.code.clone()
                };
                let message = if e.message.is_empty() {
                    "the operation failed"
                } else {
                    &e.message
                };
                let err = ProviderError::new(GCP, kind, code, message);
                Err(match op.http_error_status_code {
                    Some(s) => err.with_status(s),
                    None => err,
                })
            }
        }
    }
}

/// A `requestId` for `what` of provision `provision`: a UUID (version 5 layout) from
/// SHA-256, so a repeated call by any process deduplicates at Google.
pub(super) fn request_id(what: &str, provision: &str) -> String {
    let digest = Sha256::digest(format!("levelrail:{what}:{provision}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Percent-encodes a query value.
pub(super) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(super) fn unexpected(what: &str) -> ProviderError {
    ProviderError::new(
        GCP,
        ErrorKind::Other,
        "unexpected_response",
        &format!("could not read the answer: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_stable_uuids_per_purpose() {
        let a = request_id("create", "npv_1");
        assert_eq!(a, request_id("create", "npv_1"));
        assert_ne!(a, request_id("delete", "npv_1"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "5");
        assert_eq!(encode("a b=\"c\""), "a%20b%3D%22c%22");
    }
}
