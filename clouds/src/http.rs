//! The shared HTTP layer of the REST providers: bearer auth, timeouts, the per-credential
//! rate limiter (told the limit and count each answer reports in `RateLimit-Limit` /
//! `RateLimit-Remaining`), `Retry-After` / `RateLimit-Reset` honoured (capped), full-jitter
//! backoff on 5xx, timeouts and dropped connections for idempotent calls only, and
//! classification of failures into `ProviderError` by the provider's own parser.
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng as _;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;
use sha2::{Digest as _, Sha256};
use tracing::{debug, warn};

use super::ratelimit::RateLimiter;
use super::{ErrorKind, ProviderError, ProviderId};

/// Turns a non-2xx answer into (kind, provider code, provider message).
pub type Classifier = fn(status: u16, body: &[u8]) -> (ErrorKind, String, String);

/// Retry and timeout settings.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in total (first try included).
    pub max_attempts: u32,
    /// First backoff ceiling; doubles per attempt (full jitter: a random delay below it).
    pub base_backoff: Duration,
    /// Largest backoff ceiling.
    pub max_backoff: Duration,
    /// Largest wait after a 429 (from `Retry-After`, the limit's own pace or
    /// `RateLimit-Reset`).
    pub max_retry_after: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
        }
    }
}

/// A successful answer.
#[derive(Debug)]
pub struct ApiResponse {
    /// HTTP status.
    pub status: u16,
    pub headers: HeaderMap,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl ApiResponse {
    /// The body as JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self, provider: ProviderId) -> Result<T, ProviderError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ProviderError::new(
                provider,
                ErrorKind::Other,
                "unexpected_response",
                &format!(
                    "could not parse the provider's answer ({:?} at line {} column {})",
                    e.classify(),
                    e.line(),
                    e.column()
                ),
            )
        })
    }
}

/// One provider's REST API as seen with one credential.
pub struct ApiClient {
    provider: ProviderId,
    base_url: String,
    /// The bearer token; `None` for a public API that takes none (and must not be sent
    /// one meant for another).
    token: Option<SecretString>,
    http: reqwest::Client,
    limiter: Arc<RateLimiter>,
    policy: RetryPolicy,
    classify: Classifier,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClient")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// The HTTPS clients of this process, one per distinct setting (request timeout, extra
/// root certificates): every provider client with those settings shares its connection
/// pool and its parsed trust store, and the bearer token travels per request. Building one
/// reads and parses the system's roots, milliseconds of blocking work, so it happens once,
/// not once per grant or per provision.
fn shared_http(timeout: Duration, extra_root_pem: Option<&str>) -> Result<reqwest::Client, String> {
    type Key = (Duration, Option<[u8; 32]>);
    static CLIENTS: LazyLock<Mutex<HashMap<Key, reqwest::Client>>> =
        LazyLock::new(Default::default);
    let key: Key = (
        timeout,
        extra_root_pem.map(|pem| Sha256::digest(pem.as_bytes()).into()),
    );
    let mut clients = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(client) = clients.get(&key) {
        return Ok(client.clone());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    // No redirect is followed: reqwest's default re-sends a 307/308 request, body and
    // credential included, to whatever host the answer names.
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("levelrail/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = extra_root_pem {
        let certs =
            reqwest::Certificate::from_pem_bundle(pem.as_bytes()).map_err(|e| e.to_string())?;
        builder = builder.tls_certs_merge(certs);
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    clients.insert(key, client.clone());
    Ok(client)
}

impl ApiClient {
    /// A client for `base_url` (no trailing slash needed) authenticated with `token`.
    pub fn new(
        provider: ProviderId,
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        classify: Classifier,
    ) -> Result<Self, ProviderError> {
        Self::with_extra_root(provider, base_url, token, limiter, policy, classify, None)
    }

    /// Like [`ApiClient::new`], also trusting the PEM certificates in `extra_root_pem` next to
    /// the platform's roots (a private CA: a test or demo cloud, a TLS-inspecting proxy).
    pub fn with_extra_root(
        provider: ProviderId,
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        classify: Classifier,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        Self::build(
            provider,
            base_url,
            Some(token),
            limiter,
            policy,
            classify,
            extra_root_pem,
        )
    }

    fn build(
        provider: ProviderId,
        base_url: &str,
        token: Option<SecretString>,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        classify: Classifier,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let http = shared_http(policy.timeout, extra_root_pem)
            .map_err(|e| ProviderError::new(provider, ErrorKind::Other, "client", &e))?;
        Ok(Self {
            provider,
            base_url: base_url.trim_end_matches('/').to_owned(),
            token,
            http,
            limiter,
            policy,
            classify,
        })
    }

    /// Like [`ApiClient::with_extra_root`], for a public API that takes no credential: no
    /// `Authorization` header is sent.
    pub fn anonymous(
        provider: ProviderId,
        base_url: &str,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
        classify: Classifier,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        Self::build(
            provider,
            base_url,
            None,
            limiter,
            policy,
            classify,
            extra_root_pem,
        )
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// GET `path` and parse JSON.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, ProviderError> {
        self.send(Method::GET, path, None, true)
            .await?
            .json(self.provider)
    }

    /// Sends a request. `idempotent` allows retrying after 5xx, timeouts and dropped
    /// connections; 429 is retried in every case (the provider did not process it).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
        idempotent: bool,
    ) -> Result<ApiResponse, ProviderError> {
        let url = self.url(path);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.limiter.acquire().await;
            let sent = tokio::time::Instant::now();
            let mut req = self
                .http
                .request(method.clone(), &url)
                .header("accept", "application/json");
            if let Some(token) = &self.token {
                req = req.bearer_auth(token.expose_secret());
            }
            if let Some(b) = body {
                req = req.json(b);
            }
            let last = attempt >= self.policy.max_attempts;
            match req.send().await {
                Err(e) => {
                    let err = self.transport_error(&e);
                    if idempotent && !last {
                        debug!(provider = %self.provider, %method, path, attempt, error = %err, "retrying after a transport error");
                        self.backoff(attempt).await;
                        continue;
                    }
                    return Err(err);
                }
                Ok(resp) => {
                    let status = resp.status();
                    let headers = resp.headers().clone();
                    if let (Some(limit), Some(remaining)) = (
                        header_u64(&headers, "ratelimit-limit"),
                        header_u64(&headers, "ratelimit-remaining"),
                    ) {
                        self.limiter.report(sent, limit, remaining);
                    }
                    let body = resp.bytes().await.map(|b| b.to_vec());
                    let body = match body {
                        Ok(b) => b,
                        Err(e) if idempotent && !last => {
                            debug!(provider = %self.provider, error = %e, "body read failed; retrying");
                            self.backoff(attempt).await;
                            continue;
                        }
                        Err(e) => return Err(self.transport_error(&e)),
                    };
                    if status.is_success() {
                        return Ok(ApiResponse {
                            status: status.as_u16(),
                            headers,
                            body,
                        });
                    }
                    if status.is_redirection() {
                        return Err(self.redirected(status, &headers));
                    }
                    if status == StatusCode::TOO_MANY_REQUESTS {
                        let wait = self.retry_after(&headers);
                        self.limiter.pause_until(tokio::time::Instant::now() + wait);
                        if !last {
                            warn!(provider = %self.provider, wait_ms = wait.as_millis() as u64, "rate limited by the provider; waiting");
                            continue;
                        }
                        let mut err = self.classified(status, &body);
                        err.kind = ErrorKind::RateLimited;
                        err.retry_after = Some(wait);
                        return Err(err);
                    }
                    if status.is_server_error() && idempotent && !last {
                        debug!(provider = %self.provider, status = status.as_u16(), attempt, "retrying after a server error");
                        self.backoff(attempt).await;
                        continue;
                    }
                    return Err(self.classified(status, &body));
                }
            }
        }
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_owned()
        } else {
            format!("{}/{}", self.base_url, path.trim_start_matches('/'))
        }
    }

    fn classified(&self, status: StatusCode, body: &[u8]) -> ProviderError {
        let (kind, code, message) = (self.classify)(status.as_u16(), body);
        ProviderError::new(self.provider, kind, code, &message).with_status(status.as_u16())
    }

    /// A redirect, which is not followed (the request carries the credential): the error
    /// names the host it pointed to, never the whole location.
    fn redirected(&self, status: StatusCode, headers: &HeaderMap) -> ProviderError {
        let to = headers
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| reqwest::Url::parse(v).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
            .map_or_else(|| "elsewhere".to_owned(), |host| format!("to {host}"));
        ProviderError::new(
            self.provider,
            ErrorKind::Other,
            "redirect",
            &format!(
                "the {} API answered {} with a redirect {to}; redirects are not followed \
                 (check the API endpoint)",
                self.provider,
                status.as_u16()
            ),
        )
        .with_status(status.as_u16())
    }

    fn transport_error(&self, e: &reqwest::Error) -> ProviderError {
        let what = if e.is_timeout() {
            "timeout"
        } else if e.is_connect() {
            "connect"
        } else {
            "connection"
        };
        // reqwest's Display includes the URL, never headers; the URL holds no secret.
        ProviderError::new(
            self.provider,
            ErrorKind::Unavailable,
            what,
            &format!("{what} error talking to the {} API", self.provider),
        )
    }

    async fn backoff(&self, attempt: u32) {
        let pause = full_jitter(self.policy.base_backoff, self.policy.max_backoff, attempt);
        tokio::time::sleep(pause).await;
    }

    /// `Retry-After` (seconds or HTTP date); else, where the reported hourly limit is the
    /// provider's only one (Hetzner), the time it takes to earn one request back; else
    /// `RateLimit-Reset` (UNIX time: when the budget is whole again, far later than the
    /// next request may go); capped; one second when the provider says nothing.
    fn retry_after(&self, headers: &HeaderMap) -> Duration {
        let now = SystemTime::now();
        let from_retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.trim()
                    .parse::<u64>()
                    .ok()
                    .map(Duration::from_secs)
                    .or_else(|| httpdate(v).and_then(|t| t.duration_since(now).ok()))
            });
        let from_reset = || {
            header_u64(headers, "ratelimit-reset").and_then(|ts| {
                let now_s = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
                // Some providers send seconds-until-reset, others a UNIX timestamp.
                Some(Duration::from_secs(if ts > 1_000_000_000 {
                    ts.saturating_sub(now_s)
                } else {
                    ts
                }))
            })
        };
        from_retry_after
            .or_else(|| self.limiter.request_interval())
            .or_else(from_reset)
            .unwrap_or(Duration::from_secs(1))
            .min(self.policy.max_retry_after)
    }
}

/// Header `name` as a whole number, when the answer carries it as one.
fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// The full-jitter pause before attempt `attempt` (1-based): a random duration below a
/// ceiling that starts at `base`, doubles per attempt and stops at `max`.
pub fn full_jitter(base: Duration, max: Duration, attempt: u32) -> Duration {
    let ceiling = base
        .saturating_mul(1u32 << attempt.clamp(1, 16).saturating_sub(1))
        .min(max);
    Duration::from_millis(rand::thread_rng().gen_range(0..=ceiling.as_millis().max(1) as u64))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn httpdate(s: &str) -> Option<SystemTime> {
    let fmt = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let t = time::PrimitiveDateTime::parse(s.trim(), &fmt)
        .ok()?
        .assume_utc();
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(t.unix_timestamp()).ok()?))
}
