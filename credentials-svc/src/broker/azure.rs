//! The Azure AD token exchange: the OAuth 2.0 client credentials grant at
//! `<authority>/<tenant>/oauth2/v2.0/token` for the ARM scope, authenticated by the client
//! secret or, with workload identity federation, by the JWT in the federated token file
//! (`client_assertion_type=…jwt-bearer`). The file is read again for every exchange, so a
//! rotated token is used without a restart; the broker's grant cache asks for a fresh
//! exchange shortly before the access token expires. Form fields go in the order the Azure
//! SDK sends them (`specs/golden-azure-sdk-requests.jsonl`).
use async_trait::async_trait;
use secrecy::ExposeSecret as _;

use super::oauth::{self, TokenClient};
use super::token_files::TokenFileDir;
use super::{AccessGrant, GrantContext, GrantIssuer, GrantSecret};
use crate::model::{CredentialSecret, CredentialsError, ProviderId};

/// The public Azure AD authority.
pub const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
/// The scope of an ARM access token (also when the authority or ARM endpoint is overridden:
/// it names the resource, not a URL that is called).
pub const ARM_SCOPE: &str = "https://management.azure.com/.default";
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Issues Azure grants (ARM access tokens).
#[derive(Debug, Clone)]
pub struct AzureGrantIssuer {
    authority: String,
    client: TokenClient,
    token_files: TokenFileDir,
}

impl AzureGrantIssuer {
    /// An issuer asking the authority at `authority` (`DEFAULT_AUTHORITY`, or a fake's),
    /// trusting `extra_root_pem` in addition to the platform's roots.
    pub fn new(authority: &str, extra_root_pem: Option<&str>) -> Result<Self, CredentialsError> {
        Ok(Self {
            authority: authority.trim_end_matches('/').to_owned(),
            client: TokenClient::new(extra_root_pem)?,
            token_files: TokenFileDir::default(),
        })
    }

    /// Reads federated token files from `files` (none are read otherwise).
    pub fn with_token_files(mut self, files: TokenFileDir) -> Self {
        self.token_files = files;
        self
    }
}

#[async_trait]
impl GrantIssuer for AzureGrantIssuer {
    async fn issue(
        &self,
        credential_id: &str,
        secret: &CredentialSecret,
    ) -> Result<AccessGrant, CredentialsError> {
        let CredentialSecret::Azure {
            tenant_id,
            client_id,
            client_secret,
            federated_token_file,
            subscription_id,
            resource_group,
        } = secret
        else {
            return Err(CredentialsError::FailedPrecondition(
                "the Azure issuer only takes Azure credentials".into(),
            ));
        };
        let url = format!("{}/{tenant_id}/oauth2/v2.0/token", self.authority);
        let answer =
            match (client_secret, federated_token_file) {
                (Some(s), _) => {
                    let fields = [
                        ("client_id", client_id.as_str()),
                        ("client_secret", s.expose_secret()),
                        ("grant_type", "client_credentials"),
                        ("scope", ARM_SCOPE),
                    ];
                    self.client.post_form(&url, &fields, "Azure AD").await?
                }
                (None, Some(path)) => {
                    let assertion = self
                        .token_files
                        .read(path, "the federated token file")
                        .await?;
                    let fields = [
                        ("client_assertion", assertion.expose_secret()),
                        ("client_assertion_type", JWT_BEARER),
                        ("client_id", client_id.as_str()),
                        ("grant_type", "client_credentials"),
                        ("scope", ARM_SCOPE),
                    ];
                    self.client.post_form(&url, &fields, "Azure AD").await?
                }
                (None, None) => return Err(CredentialsError::FailedPrecondition(
                    "the Azure credential has neither a client secret nor a federated token file"
                        .into(),
                )),
            };
        Ok(AccessGrant {
            provider: ProviderId::Azure,
            expires_at: oauth::expiry(&answer),
            secret: GrantSecret::Bearer(oauth::access_token(&answer, "Azure AD")?),
            context: GrantContext {
                credential_id: credential_id.to_owned(),
                subscription_id: subscription_id.clone(),
                resource_group: resource_group.clone(),
                ..GrantContext::default()
            },
        })
    }
}
