//! In-process bridges between the two services in all-in-one mode: the provisioner gets
//! access grants from the credentials service, and the credentials service verifies a
//! credential with the provisioner's provider clients.
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use levelrail_credentials::broker::GrantSecret;
use levelrail_credentials::domain::probe::{CredentialProbe, ProbeOutcome};
use levelrail_credentials::domain::{
    CredentialSecret, Credentials, CredentialsError, ProviderKind,
};
use levelrail_provisioner::providers::registry::{
    AccessBroker, BrokerError, Grant, GrantContext, ProviderRegistry,
};
use levelrail_provisioner::providers::{ErrorKind, ProviderId};
use secrecy::{ExposeSecret as _, SecretString};

/// Provider ids are the same five clouds on both sides.
pub fn to_kind(id: ProviderId) -> ProviderKind {
    match id {
        ProviderId::Hetzner => ProviderKind::Hetzner,
        ProviderId::DigitalOcean => ProviderKind::DigitalOcean,
        ProviderId::Aws => ProviderKind::Aws,
        ProviderId::Azure => ProviderKind::Azure,
        ProviderId::Gcp => ProviderKind::Gcp,
    }
}

/// The reverse of [`to_kind`].
pub fn to_id(kind: ProviderKind) -> ProviderId {
    match kind {
        ProviderKind::Hetzner => ProviderId::Hetzner,
        ProviderKind::DigitalOcean => ProviderId::DigitalOcean,
        ProviderKind::Aws => ProviderId::Aws,
        ProviderKind::Azure => ProviderId::Azure,
        ProviderKind::Gcp => ProviderId::Gcp,
    }
}

/// The credentials service as the provisioner's broker (all-in-one mode: no network hop).
#[derive(Debug, Clone)]
pub struct InProcessBroker {
    credentials: Credentials,
}

impl InProcessBroker {
    /// Grants from `credentials`.
    pub fn new(credentials: Credentials) -> Self {
        Self { credentials }
    }
}

#[async_trait]
impl AccessBroker for InProcessBroker {
    async fn issue(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError> {
        let grant = self
            .credentials
            .issue_access(to_kind(provider), purpose)
            .await
            .map_err(|e| match e {
                CredentialsError::NotConnected(_) => BrokerError::NotConnected(provider),
                other => BrokerError::Failed(tonic::Status::from(other).message().to_owned()),
            })?;
        match grant.secret {
            GrantSecret::Bearer(token) => Ok(Grant {
                context: GrantContext {
                    region: grant.context.region,
                    subscription_id: grant.context.subscription_id,
                    resource_group: grant.context.resource_group,
                    project_id: grant.context.project_id,
                },
                credential_id: grant.context.credential_id,
                token,
            }),
            _ => Err(BrokerError::Failed(format!(
                "{provider} grants are not bearer tokens"
            ))),
        }
    }
}

/// Verifies credentials with the provider clients of the registry. The registry is set
/// once it exists (it needs the broker, which needs the credentials service).
#[derive(Debug, Default, Clone)]
pub struct RegistryProbe {
    registry: Arc<OnceLock<Arc<ProviderRegistry>>>,
}

impl RegistryProbe {
    /// Connects the probe to the registry.
    pub fn set_registry(&self, registry: Arc<ProviderRegistry>) {
        let _ = self.registry.set(registry);
    }
}

#[async_trait]
impl CredentialProbe for RegistryProbe {
    async fn probe(&self, secret: &CredentialSecret) -> Result<ProbeOutcome, CredentialsError> {
        let kind = secret.provider();
        let id = to_id(kind);
        let (CredentialSecret::Token { token, .. }, Some(registry)) = (secret, self.registry.get())
        else {
            return Err(CredentialsError::FailedPrecondition(format!(
                "verification of {} credentials is not available on this control plane",
                kind.display_name()
            )));
        };
        if !registry.supports(id) {
            return Err(CredentialsError::FailedPrecondition(format!(
                "{} is not available on this control plane",
                kind.display_name()
            )));
        }
        let client = registry
            .client_with_token(
                id,
                SecretString::from(token.expose_secret().to_owned()),
                &GrantContext::default(),
                "verify",
            )
            .map_err(|e| CredentialsError::Unavailable(e.to_string()))?;
        match client.probe().await {
            Ok(report) => Ok(ProbeOutcome {
                ok: report.can_write,
                message: report.message,
                provider_code: String::new(),
                account: report.account,
            }),
            Err(e) if e.kind == ErrorKind::Unavailable => Err(CredentialsError::Unavailable(
                format!("could not reach {}: {}", kind.display_name(), e.message),
            )),
            Err(e) => Ok(ProbeOutcome {
                ok: false,
                message: format!(
                    "{} refused the credential: {}",
                    kind.display_name(),
                    e.message
                ),
                provider_code: e.code,
                account: String::new(),
            }),
        }
    }
}
