//! The DigitalOcean API v2 endpoints Levelrail uses, typed, over the shared `ApiClient`
//! (bearer auth, rate limiter, retries of idempotent calls). Lists follow the absolute
//! `links.pages.next` URL, but only on the API's own origin, so a tampered or misdirected
//! answer cannot send the token elsewhere. Deletes treat 404 as done.
use std::sync::Arc;

use reqwest::{Method, Url};
use secrecy::SecretString;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::errors::classify;
use super::wire::{
    Account, AccountEnvelope, CreateDroplet, CreateFirewall, CreateSshKey, CreateTag, Droplet,
    DropletEnvelope, Firewall, FirewallEnvelope, FirewallTags, Region, Size, SshKey,
    SshKeyEnvelope, TagResources, TaggedResource,
};
use crate::http::{ApiClient, ApiResponse, RetryPolicy};
use crate::ratelimit::RateLimiter;
use crate::{ErrorKind, ProviderError, ProviderId};

const DO: ProviderId = ProviderId::DigitalOcean;
/// DigitalOcean's largest page.
const PER_PAGE: u32 = 200;
/// A list longer than this many pages is treated as a paging loop.
const MAX_PAGES: usize = 500;

/// One credential's view of the DigitalOcean API.
#[derive(Debug)]
pub(super) struct Api {
    http: ApiClient,
    /// The base URL; paging links must share its origin.
    base: Url,
}

impl Api {
    pub(super) fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        let base =
            Url::parse(base_url).map_err(|_| invalid("the DigitalOcean base URL is not a URL"))?;
        let http = ApiClient::new(DO, base_url, token, limiter, policy, classify)?;
        Ok(Self { http, base })
    }

    pub(super) async fn regions(&self) -> Result<Vec<Region>, ProviderError> {
        self.list(&format!("/regions?per_page={PER_PAGE}"), "regions")
            .await
    }

    pub(super) async fn sizes(&self) -> Result<Vec<Size>, ProviderError> {
        self.list(&format!("/sizes?per_page={PER_PAGE}"), "sizes")
            .await
    }

    pub(super) async fn account(&self) -> Result<Account, ProviderError> {
        Ok(self
            .http
            .get_json::<AccountEnvelope>("/account")
            .await?
            .account)
    }

    pub(super) async fn droplet(&self, id: u64) -> Result<Droplet, ProviderError> {
        Ok(self
            .http
            .get_json::<DropletEnvelope>(&format!("/droplets/{id}"))
            .await?
            .droplet)
    }

    /// Droplets carrying `tag` (tag names need no escaping: `[A-Za-z0-9_:-]`).
    pub(super) async fn droplets_tagged(&self, tag: &str) -> Result<Vec<Droplet>, ProviderError> {
        self.list(
            &format!("/droplets?tag_name={tag}&per_page={PER_PAGE}"),
            "droplets",
        )
        .await
    }

    /// One create attempt, never retried here: droplet names are not unique, so only the
    /// caller, after listing the provision tag, may try again.
    pub(super) async fn create_droplet(
        &self,
        body: &CreateDroplet<'_>,
    ) -> Result<Droplet, ProviderError> {
        let resp = self
            .http
            .send(Method::POST, "/droplets", Some(&to_json(body)?), false)
            .await?;
        Ok(resp.json::<DropletEnvelope>(DO)?.droplet)
    }

    pub(super) async fn delete_droplet(&self, id: u64) -> Result<(), ProviderError> {
        self.delete(&format!("/droplets/{id}")).await
    }

    pub(super) async fn firewalls(&self) -> Result<Vec<Firewall>, ProviderError> {
        self.list(&format!("/firewalls?per_page={PER_PAGE}"), "firewalls")
            .await
    }

    /// One create attempt (firewall names are not unique either).
    pub(super) async fn create_firewall(
        &self,
        body: &CreateFirewall,
    ) -> Result<Firewall, ProviderError> {
        let resp = self
            .http
            .send(Method::POST, "/firewalls", Some(&to_json(body)?), false)
            .await?;
        Ok(resp.json::<FirewallEnvelope>(DO)?.firewall)
    }

    /// Adds tags to a firewall (repeating it is harmless).
    pub(super) async fn tag_firewall(
        &self,
        id: &str,
        tags: Vec<String>,
    ) -> Result<(), ProviderError> {
        let body = to_json(&FirewallTags { tags })?;
        self.http
            .send(
                Method::POST,
                &format!("/firewalls/{id}/tags"),
                Some(&body),
                true,
            )
            .await?;
        Ok(())
    }

    pub(super) async fn delete_firewall(&self, id: &str) -> Result<(), ProviderError> {
        self.delete(&format!("/firewalls/{id}")).await
    }

    pub(super) async fn ssh_keys(&self) -> Result<Vec<SshKey>, ProviderError> {
        self.list(&format!("/account/keys?per_page={PER_PAGE}"), "ssh_keys")
            .await
    }

    /// The account's key with this MD5 fingerprint (`GET /v2/account/keys/{fingerprint}`),
    /// or `None` (404).
    pub(super) async fn ssh_key_by_fingerprint(
        &self,
        fingerprint: &str,
    ) -> Result<Option<SshKey>, ProviderError> {
        match self
            .http
            .get_json::<SshKeyEnvelope>(&format!("/account/keys/{fingerprint}"))
            .await
        {
            Ok(found) => Ok(Some(found.ssh_key)),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One upload attempt. DigitalOcean refuses a key already on the account (422), so the
    /// caller re-lists rather than retrying blindly.
    pub(super) async fn create_ssh_key(
        &self,
        name: &str,
        public_key: &str,
    ) -> Result<SshKey, ProviderError> {
        let body = to_json(&CreateSshKey { name, public_key })?;
        let resp = self
            .http
            .send(Method::POST, "/account/keys", Some(&body), false)
            .await?;
        Ok(resp.json::<SshKeyEnvelope>(DO)?.ssh_key)
    }

    pub(super) async fn delete_ssh_key(&self, id: u64) -> Result<(), ProviderError> {
        self.delete(&format!("/account/keys/{id}")).await
    }

    /// POST /v2/tags. Creating an existing tag returns it, so the call may be retried.
    pub(super) async fn create_tag(&self, name: &str) -> Result<ApiResponse, ProviderError> {
        let body = to_json(&CreateTag { name })?;
        self.http
            .send(Method::POST, "/tags", Some(&body), true)
            .await
    }

    /// Whether the token holds the scope of `method path`: 403 says no; a success, 400, 404
    /// or 422 says yes (DigitalOcean checks the scope before the body and the resource).
    pub(super) async fn scope_granted(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<bool, ProviderError> {
        match self.http.send(method, path, body, true).await {
            Ok(_) => Ok(true),
            Err(e) if e.status == Some(403) => Ok(false),
            Err(e) if matches!(e.status, Some(400 | 404 | 422)) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Takes `tag` off the droplets `ids` in one call (`DELETE /v2/tags/{tag}/resources`,
    /// scopes `tag:delete` and `droplet:update`); repeating it is harmless.
    pub(super) async fn untag_droplets(&self, tag: &str, ids: &[u64]) -> Result<(), ProviderError> {
        let body = to_json(&TagResources {
            resources: ids
                .iter()
                .map(|id| TaggedResource {
                    resource_id: id.to_string(),
                    resource_type: "droplet",
                })
                .collect(),
        })?;
        self.http
            .send(
                Method::DELETE,
                &format!("/tags/{tag}/resources"),
                Some(&body),
                true,
            )
            .await?;
        Ok(())
    }

    pub(super) async fn delete_tag(&self, name: &str) -> Result<(), ProviderError> {
        self.delete(&format!("/tags/{name}")).await
    }

    async fn delete(&self, path: &str) -> Result<(), ProviderError> {
        match self.http.send(Method::DELETE, path, None, true).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every item of a paged list: `key` holds the page's items, `links.pages.next` the
    /// absolute URL of the next page.
    async fn list<T: DeserializeOwned>(
        &self,
        first: &str,
        key: &str,
    ) -> Result<Vec<T>, ProviderError> {
        let mut items = Vec::new();
        let mut next = Some(first.to_owned());
        let mut pages = 0usize;
        while let Some(path) = next.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(unexpected("the list did not end after 500 pages"));
            }
            let mut page: serde_json::Value = self.http.get_json(&path).await?;
            let batch = page
                .get_mut(key)
                .map(serde_json::Value::take)
                .unwrap_or_default();
            if !batch.is_null() {
                let batch: Vec<T> = serde_json::from_value(batch).map_err(|e| {
                    unexpected(&format!(
                        "could not parse the {key} list ({:?})",
                        e.classify()
                    ))
                })?;
                items.extend(batch);
            }
            next = match page.pointer("/links/pages/next").and_then(|v| v.as_str()) {
                Some(link) if !link.is_empty() => Some(self.same_origin(link)?),
                _ => None,
            };
        }
        Ok(items)
    }

    /// `link` if it points at the API's own origin; an error otherwise.
    fn same_origin(&self, link: &str) -> Result<String, ProviderError> {
        match Url::parse(link) {
            Ok(url) if url.origin() == self.base.origin() => Ok(link.to_owned()),
            _ => Err(unexpected(
                "a paging link pointed outside the DigitalOcean API; not followed",
            )),
        }
    }
}

fn to_json<T: Serialize>(body: &T) -> Result<serde_json::Value, ProviderError> {
    serde_json::to_value(body).map_err(|e| invalid(&format!("could not encode the request ({e})")))
}

fn unexpected(message: &str) -> ProviderError {
    ProviderError::new(DO, ErrorKind::Other, "unexpected_response", message)
}

fn invalid(message: &str) -> ProviderError {
    ProviderError::new(DO, ErrorKind::InvalidRequest, "invalid_request", message)
}
