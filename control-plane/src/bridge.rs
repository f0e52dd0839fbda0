//! The in-process bridge between the two services in all-in-one mode: the provisioner gets
//! its access grants from the credentials service with no network hop.
use async_trait::async_trait;
use levelrail_clouds::registry::{AccessBroker, BrokerError, Grant};
use levelrail_credentials::app::Credentials;
use levelrail_credentials::broker::AccessGrant;
use levelrail_credentials::model::{CredentialsError, ProviderId};

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

    fn known_credential_id(&self, provider: ProviderId) -> Option<String> {
        self.credentials.known_credential_id(provider)
    }
}

/// A credentials error as the provisioner's broker error (safe messages only).
fn broker_error(provider: ProviderId, e: CredentialsError) -> BrokerError {
    match e {
        CredentialsError::NotConnected(_) => BrokerError::NotConnected(provider),
        CredentialsError::Unavailable(m) => BrokerError::Unavailable(m),
        CredentialsError::Store(
            e @ levelrail_credentials::model::ports::StoreError::Unavailable(_),
        ) => BrokerError::Unavailable(
            tonic::Status::from(CredentialsError::Store(e))
                .message()
                .to_owned(),
        ),
        other => BrokerError::Failed(tonic::Status::from(other).message().to_owned()),
    }
}

/// A broker grant as the provider clients take it.
fn to_grant(provider: ProviderId, grant: AccessGrant) -> Result<Grant, BrokerError> {
    grant
        .into_cloud_grant()
        .map_err(|e| broker_error(provider, e))
}
