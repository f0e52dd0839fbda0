//! The AWS token exchange: a stored long-term key becomes an STS session
//! (`GetSessionToken`); with a role ARN, `AssumeRole` runs with the stored or ambient base
//! credentials; a temporary (`ASIA…`) key is passed on as it is (STS refuses
//! `GetSessionToken` for session credentials); the ambient identity comes from the control
//! plane's own chain (environment, shared config, web identity token file, ECS, instance
//! profile) through `aws-config`. `LEVELRAIL_AWS_STS_URL` points the exchange at another
//! STS endpoint (a fake, moto, a VPC endpoint).
use std::time::SystemTime;

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_sdk_sts::config::{Credentials, Region, SharedCredentialsProvider};
use aws_sdk_sts::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use levelrail_clouds::aws::http_client;
use secrecy::{ExposeSecret as _, SecretString};
use time::OffsetDateTime;

use super::{AccessGrant, GrantContext, GrantIssuer, GrantSecret};
use crate::model::{CredentialSecret, CredentialsError, ProviderId};

/// Lifetime asked of STS for a session (the broker caches it until 5 minutes before).
const SESSION_SECONDS: i32 = 3600;

/// Issues AWS grants through STS.
#[derive(Debug, Clone, Default)]
pub struct AwsGrantIssuer {
    sts_endpoint: Option<String>,
    ambient: Option<SharedCredentialsProvider>,
    /// Whether a stored credential may use the control plane's own identity.
    ambient_allowed: bool,
}

impl AwsGrantIssuer {
    /// An issuer calling STS at `sts_endpoint` (`None`: AWS's regional endpoint). It lends
    /// no one the control plane's own identity until [`Self::allow_ambient`].
    pub fn new(sts_endpoint: Option<String>) -> Self {
        Self {
            sts_endpoint,
            ambient: None,
            ambient_allowed: false,
        }
    }

    /// Lets credentials that ask for it use the control plane's own AWS identity (its
    /// role, instance profile or environment): `serve --allow-ambient-aws`.
    pub fn allow_ambient(mut self) -> Self {
        self.ambient_allowed = true;
        self
    }

    /// Uses `provider` as the ambient identity instead of the default chain, and allows it
    /// (tests; a deployment with its own credential source).
    pub fn with_ambient(mut self, provider: SharedCredentialsProvider) -> Self {
        self.ambient = Some(provider);
        self.allow_ambient()
    }

    async fn ambient_credentials(&self, region: &str) -> Result<Credentials, CredentialsError> {
        if !self.ambient_allowed {
            return Err(CredentialsError::FailedPrecondition(
                "this control plane lends no one its own AWS identity: ambient credentials \
                 need it started with --allow-ambient-aws (or store an access key)"
                    .into(),
            ));
        }
        let provider = match &self.ambient {
            Some(p) => p.clone(),
            None => aws_config::defaults(BehaviorVersion::latest())
                .region(Region::new(region.to_owned()))
                .http_client(http_client())
                .load()
                .await
                .credentials_provider()
                .ok_or_else(|| {
                    CredentialsError::FailedPrecondition(
                        "the control plane has no ambient AWS identity".into(),
                    )
                })?,
        };
        use aws_sdk_sts::config::ProvideCredentials as _;
        provider.provide_credentials().await.map_err(|e| {
            CredentialsError::FailedPrecondition(format!(
                "the control plane's ambient AWS identity could not be resolved: {}",
                DisplayErrorContext(&e)
            ))
        })
    }

    fn sts(&self, region: &str, base: Credentials) -> aws_sdk_sts::Client {
        let mut b = aws_sdk_sts::Config::builder()
            .behavior_version(aws_sdk_sts::config::BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .credentials_provider(base)
            .http_client(http_client());
        if let Some(url) = &self.sts_endpoint {
            b = b.endpoint_url(url.clone());
        }
        aws_sdk_sts::Client::from_conf(b.build())
    }
}

#[async_trait]
impl GrantIssuer for AwsGrantIssuer {
    async fn issue(
        &self,
        credential_id: &str,
        secret: &CredentialSecret,
    ) -> Result<AccessGrant, CredentialsError> {
        let CredentialSecret::Aws {
            access_key_id,
            secret_access_key,
            session_token,
            region,
            role_arn,
            ambient,
        } = secret
        else {
            return Err(CredentialsError::FailedPrecondition(
                "not an AWS credential".into(),
            ));
        };
        let base = if *ambient {
            self.ambient_credentials(region).await?
        } else {
            let secret_key = secret_access_key.as_ref().ok_or_else(|| {
                CredentialsError::FailedPrecondition(
                    "the AWS credential has no secret access key".into(),
                )
            })?;
            Credentials::new(
                access_key_id.clone(),
                secret_key.expose_secret().to_owned(),
                session_token.as_ref().map(|t| t.expose_secret().to_owned()),
                None,
                "levelrail-stored",
            )
        };
        let session = if !role_arn.is_empty() {
            let out = self
                .sts(region, base)
                .assume_role()
                .role_arn(role_arn)
                .role_session_name(session_name(credential_id))
                .duration_seconds(SESSION_SECONDS)
                .send()
                .await
                .map_err(refused)?;
            out.credentials().map(from_sts)
        } else if *ambient || base.session_token().is_some() {
            Some(from_base(&base))
        } else {
            let out = self
                .sts(region, base)
                .get_session_token()
                .duration_seconds(SESSION_SECONDS)
                .send()
                .await
                .map_err(refused)?;
            out.credentials().map(from_sts)
        };
        let (secret, expires_at) = session.ok_or_else(|| {
            CredentialsError::Unavailable("STS answered without credentials".into())
        })?;
        Ok(AccessGrant {
            provider: ProviderId::Aws,
            expires_at,
            secret,
            context: GrantContext {
                credential_id: credential_id.to_owned(),
                region: region.clone(),
                ..Default::default()
            },
        })
    }
}

/// `levelrail-<credential id>`, within STS's 64 characters of `[\w+=,.@-]`.
fn session_name(credential_id: &str) -> String {
    let clean: String = credential_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(*c))
        .take(54)
        .collect();
    format!("levelrail-{clean}")
}

fn from_sts(c: &aws_sdk_sts::types::Credentials) -> (GrantSecret, Option<OffsetDateTime>) {
    let secret = GrantSecret::Aws {
        access_key_id: c.access_key_id().to_owned(),
        secret_access_key: SecretString::from(c.secret_access_key().to_owned()),
        session_token: Some(SecretString::from(c.session_token().to_owned())),
    };
    (
        secret,
        OffsetDateTime::from_unix_timestamp(c.expiration().secs()).ok(),
    )
}

fn from_base(c: &Credentials) -> (GrantSecret, Option<OffsetDateTime>) {
    let secret = GrantSecret::Aws {
        access_key_id: c.access_key_id().to_owned(),
        secret_access_key: SecretString::from(c.secret_access_key().to_owned()),
        session_token: c.session_token().map(|t| SecretString::from(t.to_owned())),
    };
    (
        secret,
        c.expiry().map(|t: SystemTime| OffsetDateTime::from(t)),
    )
}

/// STS refusals are `PermissionDenied` (shown to the operator); transport failures and
/// STS-side errors are `Unavailable`.
fn refused<E>(e: SdkError<E>) -> CredentialsError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &e {
        SdkError::ServiceError(ctx) if ctx.raw().status().as_u16() < 500 => {
            CredentialsError::PermissionDenied(format!(
                "AWS STS refused the credential: {} ({})",
                ctx.err().message().unwrap_or("no message"),
                ctx.err().code().unwrap_or("no code")
            ))
        }
        _ => CredentialsError::Unavailable(format!(
            "could not reach AWS STS: {}",
            DisplayErrorContext(&e)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_fit_sts() {
        assert_eq!(session_name("cred_01H/x y"), "levelrail-cred_01Hxy");
        assert!(session_name(&"a".repeat(200)).len() <= 64);
    }
}
