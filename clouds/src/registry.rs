//! Building provider clients on demand: an access grant from the credentials broker, the
//! endpoint (overridable per provider), and one rate limiter and one `Learned` per
//! credential shared by every client built for it.
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use secrecy::SecretString;
use time::OffsetDateTime;

use super::http::RetryPolicy;
use super::ratelimit::RateLimiter;
use super::{CloudProvider, ErrorKind, ProviderError, ProviderId};

/// Non-secret settings that come with a credential (where to act); each applies to one
/// provider and is `None` for the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantContext {
    /// AWS default region.
    pub region: Option<String>,
    /// Azure subscription.
    pub subscription_id: Option<String>,
    /// Azure resource group.
    pub resource_group: Option<String>,
    /// GCP project.
    pub project_id: Option<String>,
}

/// A short-lived grant for one provider, as the broker issues it.
#[derive(Clone)]
pub struct Grant {
    /// The credential it came from (a new credential gets new limiters and caches).
    pub credential_id: String,
    /// What the clients act with: a bearer token, or AWS keys.
    pub access: Access,
    /// Where to act.
    pub context: GrantContext,
    /// When the grant stops working (`None`: a long-lived API token).
    pub expires_at: Option<OffsetDateTime>,
}

/// What a grant acts with.
#[derive(Clone)]
pub enum Access {
    /// A bearer token: a Hetzner or DigitalOcean API token, or an exchanged Azure or
    /// Google access token.
    Bearer(SecretString),
    /// AWS credentials signing every request (SigV4).
    Aws(AwsKeys),
}

impl Access {
    /// The bearer token; a grant of AWS keys has none, which `provider` refuses.
    pub fn bearer(self, provider: ProviderId) -> Result<SecretString, ProviderError> {
        match self {
            Access::Bearer(token) => Ok(token),
            Access::Aws(_) => Err(wrong_access(provider, "a bearer token")),
        }
    }

    /// The AWS keys; a bearer-token grant has none, which `provider` refuses.
    pub fn aws(&self, provider: ProviderId) -> Result<&AwsKeys, ProviderError> {
        match self {
            Access::Aws(keys) => Ok(keys),
            Access::Bearer(_) => Err(wrong_access(provider, "AWS credentials")),
        }
    }
}

fn wrong_access(provider: ProviderId, wanted: &str) -> ProviderError {
    ProviderError::new(
        provider,
        ErrorKind::Unauthorized,
        "no_credentials",
        &format!("the grant carries no {wanted}"),
    )
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Access::Bearer(_) => f.write_str("Bearer(..)"),
            Access::Aws(keys) => f.debug_tuple("Aws").field(keys).finish(),
        }
    }
}

impl Grant {
    /// A bearer-token grant (every provider but AWS).
    pub fn bearer(
        credential_id: impl Into<String>,
        token: SecretString,
        context: GrantContext,
    ) -> Self {
        Self {
            credential_id: credential_id.into(),
            access: Access::Bearer(token),
            context,
            expires_at: None,
        }
    }

    /// An AWS grant: session credentials signing every request (SigV4).
    pub fn aws(credential_id: impl Into<String>, keys: AwsKeys, context: GrantContext) -> Self {
        Self {
            credential_id: credential_id.into(),
            access: Access::Aws(keys),
            context,
            expires_at: None,
        }
    }

    /// The same grant, expiring at `at` (an exchanged token or a session).
    pub fn expiring(mut self, at: Option<OffsetDateTime>) -> Self {
        self.expires_at = at;
        self
    }
}

/// AWS credentials as the broker issues them (a session from STS, or the keys themselves).
#[derive(Clone)]
pub struct AwsKeys {
    /// Access key id (not secret; shown in AWS's own logs).
    pub access_key_id: String,
    pub secret_access_key: SecretString,
    /// Session token of temporary credentials.
    pub session_token: Option<SecretString>,
}

impl std::fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsKeys")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("credential_id", &self.credential_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Why no grant could be issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// No credential is stored for the provider.
    #[error("no credential is stored for {0}")]
    NotConnected(ProviderId),
    /// The broker could not be reached or could not reach the provider's token endpoint:
    /// the same request may succeed later. The message is safe to show.
    #[error("{0}")]
    Unavailable(String),
    /// The broker refused or failed; the message is safe to show.
    #[error("{0}")]
    Failed(String),
}

/// Where grants come from (the credentials service, in-process or over mTLS).
#[async_trait]
pub trait AccessBroker: Send + Sync + std::fmt::Debug {
    /// A grant for `provider`, for `purpose` (logged by the broker).
    async fn issue(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError>;

    /// A grant issued now, never one the broker cached: the provider refused the last one.
    async fn issue_fresh(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError> {
        self.issue(provider, purpose).await
    }

    /// The id of `provider`'s current credential when the broker knows it with no I/O
    /// (`None`: it has none, or this process does not know yet; [`Self::issue`] tells).
    fn known_credential_id(&self, _provider: ProviderId) -> Option<String> {
        None
    }
}

/// What a client is built from.
#[derive(Debug)]
pub struct ClientParts<'a> {
    /// The API base URL.
    pub base_url: &'a str,
    /// What the client acts with: a bearer token, or AWS keys.
    pub access: Access,
    /// Where to act (project, subscription, region).
    pub context: &'a GrantContext,
    /// The credential's shared limiter.
    pub limiter: Arc<RateLimiter>,
    /// What earlier clients of the credential learned about it.
    pub learned: Arc<Learned>,
    /// Retries and timeouts.
    pub policy: RetryPolicy,
}

/// A credential's limiter and what its clients learned, shared by its clients.
type PerCredential = (Arc<RateLimiter>, Arc<Learned>);

/// What the clients of one credential learned about it that a later client of the same
/// credential must know: calls the provider refused it (DigitalOcean's untag, without the
/// `droplet:update` scope). Kept beside the credential's limiter, so it lasts as long as
/// the credential; a new credential starts afresh.
#[derive(Debug, Default)]
pub struct Learned {
    refused: Mutex<BTreeSet<&'static str>>,
}

impl Learned {
    /// Records that the provider refused `call`; `true` the first time.
    pub fn refuse(&self, call: &'static str) -> bool {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(call)
    }

    /// Whether the provider refused `call` to a client of this credential.
    pub fn refused(&self, call: &str) -> bool {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(call)
    }
}

/// Builds a client (one constructor per provider kind).
pub type Constructor =
    Arc<dyn Fn(ClientParts<'_>) -> Result<Arc<dyn CloudProvider>, ProviderError> + Send + Sync>;

/// A provider that can be built: its base URL, constructor and limiter shape.
#[derive(Clone)]
pub struct ProviderSpec {
    /// Base URL of the API (a fake's in tests and demo mode).
    pub base_url: String,
    /// Builds the client.
    pub construct: Constructor,
    /// A fresh limiter for a new credential.
    pub limiter: fn() -> RateLimiter,
}

impl std::fmt::Debug for ProviderSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSpec")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The providers this control plane can build clients for: their endpoints and
/// constructors, and one rate limiter per credential shared by every client built for it.
/// Needs no broker: the credentials service verifies a credential with it, before and
/// apart from any grant the provisioner asks for.
#[derive(Debug, Default)]
pub struct Clients {
    specs: HashMap<ProviderId, ProviderSpec>,
    /// Per credential: its limiter and what its clients learned.
    per_credential: Mutex<HashMap<(ProviderId, String), PerCredential>>,
    policy: RetryPolicy,
}

impl Clients {
    /// Registers a provider.
    pub fn with(mut self, id: ProviderId, spec: ProviderSpec) -> Self {
        self.specs.insert(id, spec);
        self
    }

    /// Replaces the retry policy (tests use short timeouts).
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Whether `id` is available on this control plane.
    pub fn supports(&self, id: ProviderId) -> bool {
        self.specs.contains_key(&id)
    }

    /// A client for `id` acting with `grant`.
    pub fn build(
        &self,
        id: ProviderId,
        grant: &Grant,
    ) -> Result<Arc<dyn CloudProvider>, RegistryError> {
        let spec = self.specs.get(&id).ok_or(RegistryError::Unsupported(id))?;
        let (limiter, learned) = {
            let mut map = self
                .per_credential
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.entry((id, grant.credential_id.clone()))
                .or_insert_with(|| (Arc::new((spec.limiter)()), Arc::default()))
                .clone()
        };
        (spec.construct)(ClientParts {
            base_url: &spec.base_url,
            access: grant.access.clone(),
            context: &grant.context,
            limiter,
            learned,
            policy: self.policy.clone(),
        })
        .map_err(RegistryError::Provider)
    }
}

/// Clients acting with the stored credentials: a grant from the broker for each.
#[derive(Debug)]
pub struct ProviderRegistry {
    broker: Arc<dyn AccessBroker>,
    clients: Arc<Clients>,
}

impl ProviderRegistry {
    /// A registry building `clients` with grants drawn from `broker`.
    pub fn new(broker: Arc<dyn AccessBroker>, clients: Arc<Clients>) -> Self {
        Self { broker, clients }
    }

    /// Whether `id` is available on this control plane.
    pub fn supports(&self, id: ProviderId) -> bool {
        self.clients.supports(id)
    }

    /// A client for `id` acting with the currently stored credential, and that
    /// credential's id.
    pub async fn client(
        &self,
        id: ProviderId,
        purpose: &str,
    ) -> Result<(Arc<dyn CloudProvider>, String), RegistryError> {
        let leased = self.lease(id, purpose).await?;
        Ok((leased.client, leased.credential_id))
    }

    /// The id of the credential stored for `id`: from the broker's memory when it knows
    /// it (the request path: no grant, no read), else from a grant it issues.
    pub async fn credential_id(
        &self,
        id: ProviderId,
        purpose: &str,
    ) -> Result<String, RegistryError> {
        if !self.clients.supports(id) {
            return Err(RegistryError::Unsupported(id));
        }
        if let Some(known) = self.broker.known_credential_id(id) {
            return Ok(known);
        }
        let grant = self
            .broker
            .issue(id, purpose)
            .await
            .map_err(RegistryError::Broker)?;
        Ok(grant.credential_id)
    }

    /// A client for `id` with a grant just issued by the broker, and when that grant
    /// expires (a caller that outlives it asks again).
    pub async fn lease(
        &self,
        id: ProviderId,
        purpose: &str,
    ) -> Result<LeasedClient, RegistryError> {
        self.lease_with(id, purpose, false).await
    }

    /// Like [`Self::lease`], with a grant the broker issues anew (not a cached one): for a
    /// retry after the provider refused the grant.
    pub async fn lease_fresh(
        &self,
        id: ProviderId,
        purpose: &str,
    ) -> Result<LeasedClient, RegistryError> {
        self.lease_with(id, purpose, true).await
    }

    async fn lease_with(
        &self,
        id: ProviderId,
        purpose: &str,
        fresh: bool,
    ) -> Result<LeasedClient, RegistryError> {
        if !self.clients.supports(id) {
            return Err(RegistryError::Unsupported(id));
        }
        let grant = match fresh {
            true => self.broker.issue_fresh(id, purpose).await,
            false => self.broker.issue(id, purpose).await,
        }
        .map_err(RegistryError::Broker)?;
        let client = self.clients.build(id, &grant)?;
        Ok(LeasedClient {
            client,
            credential_id: grant.credential_id,
            expires_at: grant.expires_at,
        })
    }
}

/// A client and the life of the grant it acts with.
#[derive(Clone)]
pub struct LeasedClient {
    pub client: Arc<dyn CloudProvider>,
    /// The credential the grant came from.
    pub credential_id: String,
    /// When the grant stops working (`None`: it does not expire).
    pub expires_at: Option<OffsetDateTime>,
}

impl std::fmt::Debug for LeasedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeasedClient")
            .field("credential_id", &self.credential_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl LeasedClient {
    /// Whether the grant still works for at least `margin` after `now`.
    pub fn valid_for(&self, now: OffsetDateTime, margin: std::time::Duration) -> bool {
        self.expires_at.is_none_or(|at| at - margin > now)
    }
}

/// Why a client could not be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    /// The provider is not available on this control plane.
    #[error("{0} is not available on this control plane")]
    Unsupported(ProviderId),
    /// No grant.
    #[error(transparent)]
    Broker(BrokerError),
    /// Client construction failed.
    #[error(transparent)]
    Provider(ProviderError),
}

impl RegistryError {
    /// As a provider error (for uniform handling by callers).
    pub fn into_provider_error(self, id: ProviderId) -> ProviderError {
        match self {
            RegistryError::Provider(e) => e,
            RegistryError::Broker(BrokerError::Unavailable(message)) => ProviderError::new(
                id,
                ErrorKind::Unavailable,
                "credentials_unavailable",
                &message,
            ),
            other => ProviderError::new(
                id,
                ErrorKind::Unauthorized,
                "no_credential",
                &other.to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;
    use crate::Ownership;

    fn keys() -> AwsKeys {
        AwsKeys {
            access_key_id: "AKIAEXAMPLE".into(),
            secret_access_key: SecretString::from("secret"),
            session_token: None,
        }
    }

    #[test]
    fn a_grant_carries_either_a_bearer_token_or_aws_keys() {
        let bearer = Grant::bearer("c1", SecretString::from("tok"), GrantContext::default());
        let token = bearer.access.clone().bearer(ProviderId::Hetzner);
        assert_eq!(token.expect("a token").expose_secret(), "tok");
        let refused = bearer.access.aws(ProviderId::Aws).expect_err("no keys");
        assert_eq!(
            (refused.kind, refused.code.as_str()),
            (ErrorKind::Unauthorized, "no_credentials")
        );

        let aws = Grant::aws("c2", keys(), GrantContext::default());
        assert_eq!(
            aws.access.aws(ProviderId::Aws).expect("keys").access_key_id,
            "AKIAEXAMPLE"
        );
        let refused = aws
            .access
            .bearer(ProviderId::Hetzner)
            .expect_err("no token");
        assert_eq!(refused.provider, ProviderId::Hetzner);
    }

    #[test]
    fn an_ownership_without_a_provision_id_is_refused() {
        let mut o = Ownership {
            control_plane: "cp".into(),
            provision_id: "npv_1".into(),
            node_name: "web-1".into(),
        };
        assert_eq!(o.provision(ProviderId::Gcp), Ok("npv_1"));
        for empty in ["", "  "] {
            o.provision_id = empty.into();
            let e = o.provision(ProviderId::Gcp).expect_err("refused");
            assert_eq!(
                (e.provider, e.kind),
                (ProviderId::Gcp, ErrorKind::InvalidRequest)
            );
        }
    }
}
