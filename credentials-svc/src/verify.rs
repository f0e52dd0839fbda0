//! `VerifyCredential`: proves at the provider, with the provider's own client, that a stored
//! credential can do what provisioning needs. The secret is first turned into the grant the
//! provisioner would get (the token itself, or an STS / AAD / Google exchange), so a
//! verification that passes exercises the same path a provision takes.
use std::sync::Arc;

use levelrail_clouds::registry::Clients;
use levelrail_clouds::{CapabilityReport, ErrorKind, ProviderError, Reason};
use levelrail_types::PermissionCheck;

use crate::broker::{GrantIssuer, GrantIssuers};
use crate::model::{CredentialSecret, CredentialsError, ProviderId};

/// The result of a verification that reached the provider.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProbeOutcome {
    /// The credential can create resources.
    pub ok: bool,
    /// One line, no secret material.
    pub message: String,
    /// The provider's error code when it refused.
    pub provider_code: String,
    /// The project / account the credential belongs to.
    pub account: String,
    /// Each permission checked, and whether the credential holds it (none when the cloud
    /// refused the credential outright).
    pub permissions: Vec<PermissionCheck>,
}

/// Verifies credentials with the provider clients.
#[derive(Debug, Clone)]
pub struct Verifier {
    clients: Arc<Clients>,
    exchange: Arc<dyn GrantIssuer>,
}

impl Verifier {
    /// Builds clients from `clients`, with grants from `exchange`.
    pub fn new(clients: Arc<Clients>, exchange: Arc<dyn GrantIssuer>) -> Self {
        Self { clients, exchange }
    }

    /// A verifier with no provider clients: every verification is refused as not available
    /// (the key-rotation command, which verifies nothing).
    pub fn none() -> Self {
        Self::new(
            Arc::new(Clients::default()),
            Arc::new(GrantIssuers::default()),
        )
    }

    /// Runs the provider's capability probe with `secret`. A provider that answers (even
    /// with a refusal) is an `Ok` outcome; `Err(Unavailable)` means it could not be reached.
    pub async fn verify(
        &self,
        secret: &CredentialSecret,
    ) -> Result<ProbeOutcome, CredentialsError> {
        let provider = secret.provider();
        if !self.clients.supports(provider) {
            return Err(CredentialsError::FailedPrecondition(format!(
                "verification of {} credentials is not available on this control plane",
                provider.display_name()
            )));
        }
        let grant = match self.exchange.issue("verify", secret).await {
            Ok(grant) => grant.into_cloud_grant()?,
            Err(CredentialsError::PermissionDenied(message)) => {
                return Ok(ProbeOutcome {
                    ok: false,
                    message,
                    provider_code: "token_exchange_refused".into(),
                    ..ProbeOutcome::default()
                });
            }
            Err(e) => return Err(e),
        };
        let client = self
            .clients
            .build(provider, &grant)
            .map_err(|e| CredentialsError::Unavailable(e.to_string()))?;
        outcome(provider, client.probe().await)
    }
}

fn outcome(
    provider: ProviderId,
    probed: Result<CapabilityReport, ProviderError>,
) -> Result<ProbeOutcome, CredentialsError> {
    let name = provider.display_name();
    match probed {
        Ok(report) => Ok(ProbeOutcome {
            ok: report.can_write,
            message: report.message,
            provider_code: String::new(),
            account: report.account,
            permissions: report.permissions,
        }),
        Err(e) if e.kind == ErrorKind::Unavailable => Err(CredentialsError::Unavailable(format!(
            "could not reach {name}: {}",
            e.message
        ))),
        // A named finding about the account's set-up, not a refusal of the credential.
        Err(e) if e.reason == Reason::AccountSetup => Ok(ProbeOutcome {
            ok: false,
            message: format!("{name}: {}", e.message),
            provider_code: e.code,
            ..ProbeOutcome::default()
        }),
        Err(e) => Ok(ProbeOutcome {
            ok: false,
            message: format!("{name} refused the credential: {}", e.message),
            provider_code: e.code,
            ..ProbeOutcome::default()
        }),
    }
}
