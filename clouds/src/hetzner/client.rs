//! The Hetzner Cloud HTTP client: the shared `ApiClient` (rate limit, retries, errors) plus
//! Hetzner's paging (`page` / `per_page`, `meta.pagination.next_page`) and query strings.
use std::sync::Arc;

use reqwest::Method;
use secrecy::SecretString;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::errors::classify;
use super::wire::Meta;
use crate::http::{ApiClient, RetryPolicy};
use crate::ratelimit::RateLimiter;
use crate::{ErrorKind, ProviderError, ProviderId};

/// Hetzner's largest page.
const PER_PAGE: &str = "50";
/// A guard against a provider that never stops paging.
const MAX_PAGES: u64 = 1000;

#[derive(Debug)]
pub(super) struct Client {
    api: ApiClient,
}

impl Client {
    pub(super) fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        let api = ApiClient::new(
            ProviderId::Hetzner,
            base_url,
            token,
            limiter,
            policy,
            classify,
        )?;
        Ok(Self { api })
    }

    /// GET and parse (idempotent: retried).
    pub(super) async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        params: &[(&str, &str)],
    ) -> Result<T, ProviderError> {
        self.api.get_json(&with_query(path, params)).await
    }

    /// Every item of the list `resource` (`servers`, `ssh_keys`, …), following the pages.
    pub(super) async fn list<T: DeserializeOwned>(
        &self,
        resource: &str,
        params: &[(&str, &str)],
    ) -> Result<Vec<T>, ProviderError> {
        let mut out = Vec::new();
        let mut page = 1u64;
        loop {
            let page_s = page.to_string();
            let mut all: Vec<(&str, &str)> = params.to_vec();
            all.extend([("page", page_s.as_str()), ("per_page", PER_PAGE)]);
            let mut body: serde_json::Value = self.get(resource, &all).await?;
            let items = body
                .get_mut(resource)
                .map(serde_json::Value::take)
                .unwrap_or_default();
            out.extend(parse::<Vec<T>>(items, resource)?);
            let meta: Meta = body
                .get_mut("meta")
                .map(serde_json::Value::take)
                .map(|m| parse(m, "meta"))
                .transpose()?
                .unwrap_or_default();
            match meta.pagination.and_then(|p| p.next_page) {
                Some(next) if next > page && next <= MAX_PAGES => page = next,
                _ => return Ok(out),
            }
        }
    }

    /// POST a JSON body. Never retried after a 5xx, a timeout or a dropped connection: the
    /// caller decides (look up, then maybe retry once).
    pub(super) async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ProviderError> {
        let body = serde_json::to_value(body).map_err(|e| {
            ProviderError::new(
                ProviderId::Hetzner,
                ErrorKind::Other,
                "encode",
                &e.to_string(),
            )
        })?;
        self.api
            .send(Method::POST, path, Some(&body), false)
            .await?
            .json(ProviderId::Hetzner)
    }

    /// DELETE (idempotent: retried). `Ok(false)` when it was already gone (404).
    pub(super) async fn delete(&self, path: &str) -> Result<bool, ProviderError> {
        match self.api.send(Method::DELETE, path, None, true).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn parse<T: DeserializeOwned>(v: serde_json::Value, what: &str) -> Result<T, ProviderError> {
    serde_json::from_value(v).map_err(|e| {
        ProviderError::new(
            ProviderId::Hetzner,
            ErrorKind::Other,
            "unexpected_response",
            &format!("could not read `{what}` in the answer: {e}"),
        )
    })
}

/// `path?k=v&…` with every key and value percent-encoded.
pub(super) fn with_query(path: &str, params: &[(&str, &str)]) -> String {
    if params.is_empty() {
        return path.to_owned();
    }
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    format!("{path}?{}", query.join("&"))
}

fn encode(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(with_query("servers", &[]), "servers");
        assert_eq!(
            with_query(
                "servers",
                &[("label_selector", "a=b,c in (x y)"), ("page", "2")]
            ),
            "servers?label_selector=a%3Db%2Cc%20in%20%28x%20y%29&page=2"
        );
    }
}
