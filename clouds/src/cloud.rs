//! What the server needs of each cloud besides its client, declared in the cloud's own
//! folder (`hetzner::CLOUD`, …): its API endpoints, each overridable by a flag; how its
//! client is built from a grant; its rate-limit shape; and what its error codes mean.
//! [`crate::cloud_of`] is the one table of them, so wiring a cloud into the server, its
//! flags and its error reasons needs nothing outside its folder but one line there.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;

use super::http::RetryPolicy;
use super::ratelimit::RateLimiter;
use super::registry::{ClientParts, ProviderSpec};
use super::{CloudProvider, ProviderError, ProviderId, Reason, cloud_of};

/// One of a cloud's API endpoints, overridable by `--<flag>` or `<env>` (proxies, sovereign
/// clouds, private endpoints, tests, demo mode).
#[derive(Debug)]
pub struct Endpoint {
    /// What the cloud's client reads it by (`api`, `sts`).
    pub key: &'static str,
    /// The long flag, without `--`.
    pub flag: &'static str,
    /// The environment variable.
    pub env: &'static str,
    /// The public cloud's URL; `None` when the client derives it (AWS's regional
    /// endpoints).
    pub default: Option<&'static str>,
    /// What the flag sets, for `--help`.
    pub help: &'static str,
}

/// A cloud as the server wires it.
#[derive(Debug)]
pub struct Cloud {
    pub id: ProviderId,
    /// Its API endpoints.
    pub endpoints: &'static [Endpoint],
    /// What one of its error codes means (codes its client makes up included).
    pub reason: fn(&str) -> Reason,
    /// How its client is built, at the endpoints of `settings`.
    pub spec: fn(&Settings) -> ProviderSpec,
}

impl Cloud {
    /// `id`'s endpoint `key`, if it declares one.
    fn endpoint(id: ProviderId, key: &str) -> Option<&'static Endpoint> {
        cloud_of(id).endpoints.iter().find(|e| e.key == key)
    }
}

/// The spec of a cloud whose client takes a base URL and a bearer token: `new` builds it
/// at endpoint `api` of `settings`, with the grant's token.
pub fn bearer_spec<P: CloudProvider + 'static>(
    id: ProviderId,
    settings: &Settings,
    new: fn(&str, SecretString, Arc<RateLimiter>, RetryPolicy) -> Result<P, ProviderError>,
    limiter: fn() -> RateLimiter,
) -> ProviderSpec {
    ProviderSpec {
        base_url: settings.url(id, "api").unwrap_or_default(),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let client = new(p.base_url, p.access.bearer(id)?, p.limiter, p.policy)?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter,
    }
}

/// Where the clouds' APIs live and how their clients are tuned; by default the public
/// clouds, as the flags' defaults.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    urls: BTreeMap<(ProviderId, &'static str), String>,
    /// Extra root certificates (PEM) the clients of token-exchange clouds (Azure, GCP) trust
    /// besides the system's: a TLS-inspecting proxy's, a private endpoint's, a demo cloud's.
    pub extra_ca_pem: Option<String>,
    /// Operator-named subnets to launch servers in, by region (AWS).
    pub subnets: BTreeMap<String, String>,
    /// The pause between two checks while a client waits on the cloud (AWS: for a
    /// terminated instance to release its network interface); `None`: the client's own.
    pub poll_interval: Option<Duration>,
    /// How long such a wait lasts at most; `None`: the client's own.
    pub wait_limit: Option<Duration>,
}

impl Settings {
    /// The URL of `id`'s endpoint `key`: as set, else its public default; `None` for an
    /// endpoint without a default that was not set (or a key `id` does not declare).
    pub fn url(&self, id: ProviderId, key: &str) -> Option<String> {
        let endpoint = Cloud::endpoint(id, key)?;
        self.urls
            .get(&(id, endpoint.key))
            .cloned()
            .or_else(|| endpoint.default.map(str::to_owned))
    }

    /// Points `id`'s endpoint `key` at `url`; a key `id` does not declare is refused.
    pub fn set_url(
        &mut self,
        id: ProviderId,
        key: &str,
        url: String,
    ) -> Result<(), UnknownEndpoint> {
        let endpoint = Cloud::endpoint(id, key)
            .ok_or_else(|| UnknownEndpoint(format!("{id} has no endpoint `{key}`")))?;
        self.urls.insert((id, endpoint.key), url);
        Ok(())
    }
}

/// An endpoint a cloud does not declare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownEndpoint(String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cloud_is_described_under_its_own_id_with_distinct_flags() {
        let mut flags = std::collections::BTreeSet::new();
        for p in ProviderId::ALL {
            let c = cloud_of(p);
            assert_eq!(c.id, p);
            for e in c.endpoints {
                assert!(e.flag.starts_with(p.as_str()), "{}", e.flag);
                assert_eq!(
                    e.env,
                    format!(
                        "LEVELRAIL_{}",
                        e.flag.replace('-', "_").to_ascii_uppercase()
                    )
                );
                assert!(flags.insert(e.flag), "{} twice", e.flag);
            }
        }
    }

    #[test]
    fn a_set_url_wins_over_the_default_and_an_unknown_key_is_refused() {
        let mut s = Settings::default();
        assert_eq!(
            s.url(ProviderId::Hetzner, "api").as_deref(),
            Some("https://api.hetzner.cloud/v1")
        );
        s.set_url(ProviderId::Hetzner, "api", "http://127.0.0.1:1/v1".into())
            .expect("declared");
        assert_eq!(
            s.url(ProviderId::Hetzner, "api").as_deref(),
            Some("http://127.0.0.1:1/v1")
        );
        assert!(
            s.set_url(ProviderId::Hetzner, "sts", String::new())
                .is_err()
        );
        assert_eq!(s.url(ProviderId::Aws, "ec2"), None);
    }
}
