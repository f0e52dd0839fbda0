//! In-process bridges between the two services in all-in-one mode: the provisioner gets
//! access grants from the credentials service, and the credentials service verifies a
//! credential with the provisioner's provider clients.
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use levelrail_credentials::broker::{AccessGrant, GrantIssuer, GrantSecret};
use levelrail_credentials::domain::probe::{CredentialProbe, ProbeOutcome};
use levelrail_credentials::domain::{CredentialSecret, Credentials, CredentialsError, ProviderId};
use levelrail_provisioner::providers::registry::{
    AccessBroker, AwsKeys, BrokerError, Grant, GrantContext, ProviderRegistry,
};
use levelrail_provisioner::providers::{ErrorKind, Reason};
use secrecy::{ExposeSecret as _, SecretString};

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
            .issue_access(provider, purpose)
            .await
            .map_err(|e| broker_error(provider, e))?;
        to_grant(provider, grant)
    }

    async fn issue_fresh(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError> {
        let grant = self
            .credentials
            .issue_fresh_access(provider, purpose)
            .await
            .map_err(|e| broker_error(provider, e))?;
        to_grant(provider, grant)
    }
}

/// A credentials error as the provisioner's broker error (safe messages only).
fn broker_error(provider: ProviderId, e: CredentialsError) -> BrokerError {
    match e {
        CredentialsError::NotConnected(_) => BrokerError::NotConnected(provider),
        other => BrokerError::Failed(tonic::Status::from(other).message().to_owned()),
    }
}

/// A broker grant as the provisioner's: a bearer token, or AWS session credentials.
fn to_grant(provider: ProviderId, grant: AccessGrant) -> Result<Grant, BrokerError> {
    let context = GrantContext {
        region: grant.context.region,
        subscription_id: grant.context.subscription_id,
        resource_group: grant.context.resource_group,
        project_id: grant.context.project_id,
    };
    let id = grant.context.credential_id;
    let expires_at = grant.expires_at;
    let grant = match grant.secret {
        GrantSecret::Bearer(token) => Ok(Grant::bearer(id, token, context)),
        GrantSecret::Aws {
            access_key_id,
            secret_access_key,
            session_token,
        } => Ok(Grant::aws(
            id,
            AwsKeys {
                access_key_id,
                secret_access_key,
                session_token,
            },
            context,
        )),
        GrantSecret::AwsAmbient => Err(BrokerError::Failed(format!(
            "{provider}: the broker must resolve the ambient identity into session credentials"
        ))),
    };
    grant.map(|g| g.expiring(expires_at))
}

/// Verifies credentials with the provider clients of the registry. The registry is set
/// once it exists (it needs the broker, which needs the credentials service).
#[derive(Debug, Default, Clone)]
pub struct RegistryProbe {
    registry: Arc<OnceLock<Arc<ProviderRegistry>>>,
    exchange: Option<Arc<dyn GrantIssuer>>,
}

impl RegistryProbe {
    /// Verifies credentials that need a token exchange first (AWS: STS) through `exchange`.
    pub fn with_exchange(mut self, exchange: Arc<dyn GrantIssuer>) -> Self {
        self.exchange = Some(exchange);
        self
    }

    /// Connects the probe to the registry.
    pub fn set_registry(&self, registry: Arc<ProviderRegistry>) {
        let _ = self.registry.set(registry);
    }
}

#[async_trait]
impl CredentialProbe for RegistryProbe {
    async fn probe(&self, secret: &CredentialSecret) -> Result<ProbeOutcome, CredentialsError> {
        let kind = secret.provider();
        let id = kind;
        // Every credential with a token exchange (AWS STS, Azure AD, Google OAuth / STS) is
        // verified with the grant it yields.
        let exchanged = matches!(
            secret,
            CredentialSecret::Aws { .. }
                | CredentialSecret::Azure { .. }
                | CredentialSecret::Gcp { .. }
                | CredentialSecret::GcpExternal { .. }
        );
        if let (true, Some(exchange), Some(registry)) =
            (exchanged, &self.exchange, self.registry.get())
        {
            return probe_exchanged(registry, exchange.as_ref(), secret).await;
        }
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
        outcome(kind, client.probe().await)
    }
}

/// Exchanges the secret (AWS: an STS session), then probes with the grant.
async fn probe_exchanged(
    registry: &ProviderRegistry,
    exchange: &dyn GrantIssuer,
    secret: &CredentialSecret,
) -> Result<ProbeOutcome, CredentialsError> {
    let kind = secret.provider();
    let id = kind;
    let grant = match exchange.issue("verify", secret).await {
        Ok(g) => g,
        Err(CredentialsError::PermissionDenied(message)) => {
            return Ok(ProbeOutcome {
                ok: false,
                message,
                provider_code: "token_exchange_refused".into(),
                account: String::new(),
            });
        }
        Err(e) => return Err(e),
    };
    let grant = to_grant(id, grant).map_err(|e| CredentialsError::Unavailable(e.to_string()))?;
    let client = registry
        .client_with_grant(id, &grant)
        .map_err(|e| CredentialsError::Unavailable(e.to_string()))?;
    outcome(kind, client.probe().await)
}

fn outcome(
    kind: ProviderId,
    probed: Result<
        levelrail_provisioner::providers::CapabilityReport,
        levelrail_provisioner::providers::ProviderError,
    >,
) -> Result<ProbeOutcome, CredentialsError> {
    match probed {
        Ok(report) => Ok(ProbeOutcome {
            ok: report.can_write,
            message: report.message,
            provider_code: String::new(),
            account: report.account,
        }),
        Err(e) if e.kind == ErrorKind::Unavailable => Err(CredentialsError::Unavailable(format!(
            "could not reach {}: {}",
            kind.display_name(),
            e.message
        ))),
        // A named finding about the account's set-up, not a refusal of the credential.
        Err(e) if e.reason == Reason::AccountSetup => Ok(ProbeOutcome {
            ok: false,
            message: format!("{}: {}", kind.display_name(), e.message),
            provider_code: e.code,
            account: String::new(),
        }),
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
