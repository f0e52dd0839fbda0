//! Short-lived access grants for the provisioner. Hetzner and DigitalOcean have no token
//! exchange, so their grant is the API token itself; the token exchanges of AWS (STS),
//! Azure (AAD) and GCP (OAuth) register their issuers here.
pub mod aws;
pub mod azure;
pub mod gcp;
pub mod oauth;
#[cfg(test)]
mod tests;
pub mod token_files;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use secrecy::{ExposeSecret as _, SecretString};
use time::{Duration, OffsetDateTime};

use levelrail_clouds::registry::{AwsKeys, Grant as CloudGrant, GrantContext as CloudGrantContext};

use crate::model::{CredentialSecret, CredentialsError, ProviderId};

/// A grant. Holds secret material; Debug is redacted.
#[derive(Clone)]
pub struct AccessGrant {
    pub provider: ProviderId,
    /// When it stops working (`None`: until the credential is replaced).
    pub expires_at: Option<OffsetDateTime>,
    /// The secret part.
    pub secret: GrantSecret,
    /// Non-secret context for the provider client.
    pub context: GrantContext,
}

impl std::fmt::Debug for AccessGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessGrant")
            .field("provider", &self.provider)
            .field("expires_at", &self.expires_at)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

/// The secret part of a grant.
#[derive(Clone)]
pub enum GrantSecret {
    /// A bearer token.
    Bearer(SecretString),
    /// AWS session credentials.
    Aws {
        access_key_id: String,
        secret_access_key: SecretString,
        session_token: Option<SecretString>,
    },
    /// Use the control plane's ambient AWS identity.
    AwsAmbient,
}

impl std::fmt::Debug for GrantSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GrantSecret::Bearer(_) => "Bearer(<redacted>)",
            GrantSecret::Aws { .. } => "Aws(<redacted>)",
            GrantSecret::AwsAmbient => "AwsAmbient",
        })
    }
}

/// Non-secret context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantContext {
    /// The credential the grant came from.
    pub credential_id: String,
    /// AWS region.
    pub region: String,
    /// Azure subscription.
    pub subscription_id: String,
    /// Azure resource group.
    pub resource_group: String,
    /// GCP project.
    pub project_id: String,
}

impl AccessGrant {
    /// The grant as the provider clients take it: a bearer token, or AWS session
    /// credentials. The ambient AWS identity has no keys to hand over, so a broker must have
    /// resolved it into a session first.
    pub fn into_cloud_grant(self) -> Result<CloudGrant, CredentialsError> {
        // The broker's context spells a field that does not apply as "".
        let set = |v: String| Some(v).filter(|v| !v.is_empty());
        let context = CloudGrantContext {
            region: set(self.context.region),
            subscription_id: set(self.context.subscription_id),
            resource_group: set(self.context.resource_group),
            project_id: set(self.context.project_id),
        };
        let id = self.context.credential_id;
        let grant = match self.secret {
            GrantSecret::Bearer(token) => CloudGrant::bearer(id, token, context),
            GrantSecret::Aws {
                access_key_id,
                secret_access_key,
                session_token,
            } => CloudGrant::aws(
                id,
                AwsKeys {
                    access_key_id,
                    secret_access_key,
                    session_token,
                },
                context,
            ),
            GrantSecret::AwsAmbient => {
                return Err(CredentialsError::Unavailable(format!(
                    "{}: the ambient identity was not resolved into session credentials",
                    self.provider.display_name()
                )));
            }
        };
        Ok(grant.expiring(self.expires_at))
    }
}

/// Turns a stored secret into a grant.
#[async_trait]
pub trait GrantIssuer: Send + Sync + std::fmt::Debug {
    /// Issues a grant for `secret` (stored as credential `credential_id`).
    async fn issue(
        &self,
        credential_id: &str,
        secret: &CredentialSecret,
    ) -> Result<AccessGrant, CredentialsError>;
}

/// Issues the API token itself for Hetzner and DigitalOcean, and dispatches other
/// providers to their registered token exchange.
#[derive(Debug, Default, Clone)]
pub struct GrantIssuers {
    exchanges: HashMap<ProviderId, Arc<dyn GrantIssuer>>,
}

impl GrantIssuers {
    /// Registers the token exchange of a provider.
    pub fn with(mut self, provider: ProviderId, issuer: Arc<dyn GrantIssuer>) -> Self {
        self.exchanges.insert(provider, issuer);
        self
    }
}

#[async_trait]
impl GrantIssuer for GrantIssuers {
    async fn issue(
        &self,
        credential_id: &str,
        secret: &CredentialSecret,
    ) -> Result<AccessGrant, CredentialsError> {
        if let CredentialSecret::Token { provider, token } = secret {
            return Ok(AccessGrant {
                provider: *provider,
                expires_at: None,
                secret: GrantSecret::Bearer(SecretString::from(token.expose_secret().to_owned())),
                context: GrantContext {
                    credential_id: credential_id.to_owned(),
                    ..Default::default()
                },
            });
        }
        let provider = secret.provider();
        match self.exchanges.get(&provider) {
            Some(exchange) => exchange.issue(credential_id, secret).await,
            None => Err(CredentialsError::FailedPrecondition(format!(
                "access grants for {} are not available on this control plane",
                provider.display_name()
            ))),
        }
    }
}

/// Grants are reused until this long before they expire.
const EXPIRY_MARGIN: Duration = Duration::minutes(5);

/// Per-provider cache of the last grant, keyed by the stored row it was issued from: the
/// credential id and a digest of its envelope. A replaced credential never serves an old
/// grant, and neither does a row changed behind the service's back (a tampered envelope
/// is decrypted, and refused, at the next request; a re-wrapped one is decrypted once).
#[derive(Debug, Default)]
pub struct GrantCache {
    grants: Mutex<HashMap<ProviderId, (GrantSource, AccessGrant)>>,
}

/// The stored row a grant was issued from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSource {
    credential_id: String,
    envelope_sha256: [u8; 32],
}

impl GrantSource {
    /// The row with this credential id and envelope.
    pub fn new(credential_id: &str, envelope: &[u8]) -> Self {
        use sha2::Digest as _;
        Self {
            credential_id: credential_id.to_owned(),
            envelope_sha256: sha2::Sha256::digest(envelope).into(),
        }
    }
}

impl GrantCache {
    /// A grant cached for exactly this row, still valid for at least the margin.
    pub fn get(&self, provider: ProviderId, source: &GrantSource) -> Option<AccessGrant> {
        let map = self.grants.lock().unwrap_or_else(|e| e.into_inner());
        let (cached_for, grant) = map.get(&provider)?;
        let fresh = grant
            .expires_at
            .is_none_or(|exp| exp - EXPIRY_MARGIN > OffsetDateTime::now_utc());
        (cached_for == source && fresh).then(|| grant.clone())
    }

    /// Caches a grant issued from `source`.
    pub fn put(&self, provider: ProviderId, source: GrantSource, grant: AccessGrant) {
        let mut map = self.grants.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(provider, (source, grant));
    }

    /// Drops a provider's cached grant (credential replaced or deleted).
    pub fn invalidate(&self, provider: ProviderId) {
        let mut map = self.grants.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&provider);
    }
}
