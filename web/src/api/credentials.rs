//! CredentialsService calls: the provider cards' data and the write-only credential forms.
use levelrail_proto::credentials::v1::{
    ApiToken, AwsCredential, DeleteCredentialRequest, DeleteCredentialResponse, JsonDocument,
    ListProvidersRequest, ListProvidersResponse, Provider, ProviderStatus, SetCredentialRequest,
    SetCredentialResponse, VerificationResult, VerifyCredentialRequest, VerifyCredentialResponse,
    set_credential_request::Credential,
};

use super::{Api, ApiError};

/// What a provider form submits. The secrets live only as long as the call; `Debug` never
/// shows them.
#[derive(Clone)]
pub enum CredentialInput {
    /// A bare API token, for a cloud whose credential is one.
    Token {
        /// Which cloud.
        provider: Provider,
        token: String,
    },
    /// AWS static key or ambient identity.
    Aws {
        /// Access key id (empty with ambient credentials).
        access_key_id: String,
        /// Secret access key (empty with ambient credentials).
        secret_access_key: String,
        /// Optional session token.
        session_token: String,
        /// Optional default region.
        region: String,
        /// Optional role to assume.
        role_arn: String,
        /// Use the control plane's own identity.
        use_ambient_credentials: bool,
    },
    /// Azure service principal, single-line JSON.
    Azure {
        /// The JSON document.
        json: String,
    },
    /// GCP service-account key, or a workload identity federation file.
    Gcp {
        /// The JSON document.
        json: String,
        /// The project, for an `external_account` file (which names none); else empty.
        project_id: String,
    },
}

impl std::fmt::Debug for CredentialInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CredentialInput({:?}, <redacted>)", self.provider())
    }
}

impl CredentialInput {
    /// The provider the input is for.
    pub fn provider(&self) -> Provider {
        match self {
            Self::Token { provider, .. } => *provider,
            Self::Aws { .. } => Provider::Aws,
            Self::Azure { .. } => Provider::Azure,
            Self::Gcp { .. } => Provider::Gcp,
        }
    }

    fn into_request(self) -> SetCredentialRequest {
        let provider = self.provider();
        let credential = match self {
            Self::Token { token, .. } => Credential::ApiToken(ApiToken { token }),
            Self::Aws {
                access_key_id,
                secret_access_key,
                session_token,
                region,
                role_arn,
                use_ambient_credentials,
            } => Credential::Aws(AwsCredential {
                access_key_id,
                secret_access_key,
                session_token,
                region,
                role_arn,
                use_ambient_credentials,
            }),
            Self::Azure { json } => Credential::Azure(JsonDocument {
                json,
                ..Default::default()
            }),
            Self::Gcp { json, project_id } => Credential::Gcp(JsonDocument { json, project_id }),
        };
        SetCredentialRequest {
            provider: provider as i32,
            credential: Some(credential),
        }
    }
}

/// `ListProviders` (also the sign-in check).
pub(super) const LIST_PROVIDERS: &str =
    "/levelrail.credentials.v1.CredentialsService/ListProviders";

impl Api {
    /// The five provider cards, in fixed order.
    pub async fn list_providers(&self) -> Result<Vec<ProviderStatus>, ApiError> {
        let r: ListProvidersResponse = self.unary(LIST_PROVIDERS, ListProvidersRequest {}).await?;
        Ok(r.providers)
    }

    /// Stores (or replaces) a credential; returns the updated card.
    pub async fn set_credential(&self, input: CredentialInput) -> Result<ProviderStatus, ApiError> {
        let path = "/levelrail.credentials.v1.CredentialsService/SetCredential";
        let r: SetCredentialResponse = self.unary(path, input.into_request()).await?;
        r.provider.ok_or_else(missing)
    }

    /// Removes a provider's credential; returns the updated card.
    pub async fn delete_credential(&self, provider: Provider) -> Result<ProviderStatus, ApiError> {
        let req = DeleteCredentialRequest {
            provider: provider as i32,
        };
        let r: DeleteCredentialResponse = self
            .unary(
                "/levelrail.credentials.v1.CredentialsService/DeleteCredential",
                req,
            )
            .await?;
        r.provider.ok_or_else(missing)
    }

    /// Probes the stored credential at the provider; returns the outcome and the card.
    pub async fn verify_credential(
        &self,
        provider: Provider,
    ) -> Result<(VerificationResult, ProviderStatus), ApiError> {
        let req = VerifyCredentialRequest {
            provider: provider as i32,
        };
        let r: VerifyCredentialResponse = self
            .unary(
                "/levelrail.credentials.v1.CredentialsService/VerifyCredential",
                req,
            )
            .await?;
        Ok((
            r.result.unwrap_or_default(),
            r.provider.ok_or_else(missing)?,
        ))
    }
}

/// A response without the message the contract promises.
pub(super) fn missing() -> ApiError {
    ApiError {
        kind: super::ErrorKind::Other,
        message: "The control plane sent an incomplete response.".into(),
        field: None,
    }
}
