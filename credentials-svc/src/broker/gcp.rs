//! The Google token exchanges. A service-account key signs an RS256 JWT (`kid` = the key's
//! `private_key_id`, `aud` always `https://oauth2.googleapis.com/token`, the Compute scope)
//! exchanged with the JWT-bearer grant at the OAuth endpoint, exactly as google-auth does
//! (`specs/golden-gcp-sdk-requests.jsonl`). An `external_account` credential goes through
//! workload identity federation instead (`gcp_federation`). Every endpoint is configurable
//! (fakes, private endpoints); the key's own `token_uri` is pinned to Google by the parser.
use async_trait::async_trait;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::Value;
use zeroize::Zeroizing;

use super::gcp_federation;
use super::oauth::{self, TokenClient};
use super::{AccessGrant, GrantContext, GrantIssuer, GrantSecret};
use crate::domain::{CredentialSecret, CredentialsError, ProviderKind};

/// Google's OAuth token endpoint (also the audience of every assertion).
pub const DEFAULT_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// Google's STS token endpoint.
pub const DEFAULT_STS_URL: &str = "https://sts.googleapis.com/v1/token";
/// Google's IAM Credentials API (impersonation).
pub const DEFAULT_IAM_CREDENTIALS_URL: &str = "https://iamcredentials.googleapis.com";
/// The scope asked for: Compute Engine.
pub const COMPUTE_SCOPE: &str = "https://www.googleapis.com/auth/compute";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Lifetime of an assertion (Google's maximum).
const ASSERTION_SECONDS: i64 = 3600;

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
        })
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
            CredentialSecret::Gcp {
                project_id,
                client_email,
                private_key_id,
                private_key,
                ..
            } => {
                let now = time::OffsetDateTime::now_utc().unix_timestamp();
                let assertion = assertion(client_email, private_key_id, private_key, now)?;
                let fields = [
                    ("assertion", assertion.expose_secret()),
                    ("grant_type", JWT_BEARER),
                ];
                let answer = self
                    .client
                    .post_form(&self.endpoints.token_url, &fields, "Google OAuth")
                    .await?;
                (
                    oauth::access_token(&answer, "Google OAuth")?,
                    oauth::expiry(&answer),
                    project_id.clone(),
                )
            }
            CredentialSecret::GcpExternal { project_id, .. } => {
                let (token, expires_at) = gcp_federation::exchange(self, secret).await?;
                (token, expires_at, project_id.clone())
            }
            _ => {
                return Err(CredentialsError::FailedPrecondition(
                    "the GCP issuer only takes GCP credentials".into(),
                ));
            }
        };
        Ok(AccessGrant {
            provider: ProviderKind::Gcp,
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

/// The signed assertion `header.claims.signature` (base64url without padding), with the
/// header and claims in google-auth's field order.
pub(crate) fn assertion(
    client_email: &str,
    key_id: &str,
    pem: &SecretString,
    now: i64,
) -> Result<SecretString, CredentialsError> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let s = |v: &str| Value::String(v.to_owned()).to_string();
    let header = format!(r#"{{"typ":"JWT","alg":"RS256","kid":{}}}"#, s(key_id));
    let claims = format!(
        r#"{{"iat":{now},"exp":{},"iss":{},"aud":{},"scope":{}}}"#,
        now + ASSERTION_SECONDS,
        s(client_email),
        s(DEFAULT_TOKEN_URL),
        s(COMPUTE_SCOPE)
    );
    let signing_input = format!("{}.{}", b64.encode(header), b64.encode(claims));
    let der = pem_der(pem)?;
    let key = RsaKeyPair::from_pkcs8(&der).map_err(|_| {
        CredentialsError::FailedPrecondition(
            "the service-account private key is not a usable RSA PKCS#8 key".into(),
        )
    })?;
    let mut signature = vec![0u8; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| CredentialsError::Unexpected(anyhow::anyhow!("RS256 signing failed")))?;
    Ok(SecretString::from(format!(
        "{signing_input}.{}",
        b64.encode(signature)
    )))
}

/// The DER inside a `PRIVATE KEY` PEM block (zeroized on drop).
fn pem_der(pem: &SecretString) -> Result<Zeroizing<Vec<u8>>, CredentialsError> {
    let body: Zeroizing<String> = Zeroizing::new(
        pem.expose_secret()
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::trim)
            .collect(),
    );
    base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .map(Zeroizing::new)
        .map_err(|_| {
            CredentialsError::FailedPrecondition(
                "the service-account private key is not valid PEM".into(),
            )
        })
}
