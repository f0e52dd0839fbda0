//! Capability probes: `VerifyCredential` proves at the provider that a stored credential can
//! do what provisioning needs. One probe per provider lives with that provider's client; a
//! registry dispatches by provider.
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::domain::{CredentialSecret, CredentialsError, ProviderId};

/// The result of a probe that reached the provider.
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
}

/// Proves a credential's capabilities at its provider.
#[async_trait]
pub trait CredentialProbe: Send + Sync + std::fmt::Debug {
    /// Runs the probe. A provider that answers (even with a refusal) is an `Ok` outcome;
    /// `Err(Unavailable)` means the provider could not be reached.
    async fn probe(&self, secret: &CredentialSecret) -> Result<ProbeOutcome, CredentialsError>;
}

/// Dispatches to the probe registered for the secret's provider.
#[derive(Debug, Default, Clone)]
pub struct ProbeRegistry {
    probes: HashMap<ProviderId, Arc<dyn CredentialProbe>>,
}

impl ProbeRegistry {
    /// Registers the probe of one provider.
    pub fn with(mut self, provider: ProviderId, probe: Arc<dyn CredentialProbe>) -> Self {
        self.probes.insert(provider, probe);
        self
    }
}

#[async_trait]
impl CredentialProbe for ProbeRegistry {
    async fn probe(&self, secret: &CredentialSecret) -> Result<ProbeOutcome, CredentialsError> {
        let provider = secret.provider();
        match self.probes.get(&provider) {
            Some(p) => p.probe(secret).await,
            None => Err(CredentialsError::FailedPrecondition(format!(
                "verification of {} credentials is not available on this control plane",
                provider.display_name()
            ))),
        }
    }
}
