//! The Google token exchanges. A service-account key signs an RS256 JWT (`kid` = the key's
//! `private_key_id`, `aud` always `https://oauth2.googleapis.com/token`, the Compute scope)
//! exchanged with the JWT-bearer grant at the OAuth endpoint, exactly as google-auth does
//! (`specs/golden-gcp-sdk-requests.jsonl`; see `service_account`). An `external_account`
//! credential goes through workload identity federation instead (`federation`). Every
//! endpoint is configurable (fakes, private endpoints); the key's own `token_uri` is pinned to
//! Google by the parser. The two children import this module's endpoints and issuer, never
//! each other.
mod federation;
mod service_account;

use async_trait::async_trait;

use super::oauth::TokenClient;
use super::token_files::TokenFileDir;
use super::{AccessGrant, GrantContext, GrantIssuer, GrantSecret};
use crate::model::{CredentialSecret, CredentialsError, ProviderId};

#[cfg(test)]
pub(crate) use service_account::assertion;

/// Google's OAuth token endpoint (also the audience of every assertion).
pub const DEFAULT_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// Google's STS token endpoint.
pub const DEFAULT_STS_URL: &str = "https://sts.googleapis.com/v1/token";
/// Google's IAM Credentials API (impersonation).
pub const DEFAULT_IAM_CREDENTIALS_URL: &str = "https://iamcredentials.googleapis.com";
/// The scopes asked for: Compute Engine, and reading the Cloud Billing catalog (the sizes'
/// prices; `compute` alone does not grant it).
pub const SCOPES: [&str; 2] = [
    "https://www.googleapis.com/auth/compute",
    "https://www.googleapis.com/auth/cloud-billing.readonly",
];

/// Where the Google token endpoints live.
#[derive(Debug, Clone)]
pub struct GoogleEndpoints {
    /// OAuth token endpoint (service-account assertions).
    pub token_url: String,
    /// STS token endpoint (federation).
    pub sts_url: String,
    /// IAM Credentials base (`/v1/projects/-/serviceAccounts/…:generateAccessToken`).
    pub iam_credentials_url: String,
}

impl Default for GoogleEndpoints {
    fn default() -> Self {
        Self {
            token_url: DEFAULT_TOKEN_URL.into(),
            sts_url: DEFAULT_STS_URL.into(),
            iam_credentials_url: DEFAULT_IAM_CREDENTIALS_URL.into(),
        }
    }
}

/// Issues GCP grants (OAuth access tokens for Compute).
#[derive(Debug, Clone)]
pub struct GcpGrantIssuer {
    pub(crate) endpoints: GoogleEndpoints,
    pub(crate) client: TokenClient,
    pub(crate) token_files: TokenFileDir,
}

impl GcpGrantIssuer {
    /// An issuer using `endpoints`, trusting `extra_root_pem` next to the platform's roots.
    pub fn new(
        endpoints: GoogleEndpoints,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, CredentialsError> {
        Ok(Self {
            endpoints,
            client: TokenClient::new(extra_root_pem)?,
            token_files: TokenFileDir::default(),
        })
    }

    /// Reads `external_account` subject token files from `files` (none are read otherwise).
    pub fn with_token_files(mut self, files: TokenFileDir) -> Self {
        self.token_files = files;
        self
    }
}

#[async_trait]
impl GrantIssuer for GcpGrantIssuer {
    async fn issue(
        &self,
        credential_id: &str,
        secret: &CredentialSecret,
    ) -> Result<AccessGrant, CredentialsError> {
        let (token, expires_at, project_id) = match secret {
            CredentialSecret::Gcp { project_id, .. } => {
                let (token, expires_at) = service_account::exchange(self, secret).await?;
                (token, expires_at, project_id.clone())
            }
            CredentialSecret::GcpExternal { project_id, .. } => {
                let (token, expires_at) = federation::exchange(self, secret).await?;
                (token, expires_at, project_id.clone())
            }
            _ => {
                return Err(CredentialsError::FailedPrecondition(
                    "the GCP issuer only takes GCP credentials".into(),
                ));
            }
        };
        Ok(AccessGrant {
            provider: ProviderId::Gcp,
            expires_at,
            secret: GrantSecret::Bearer(token),
            context: GrantContext {
                credential_id: credential_id.to_owned(),
                project_id,
                ..GrantContext::default()
            },
        })
    }
}
