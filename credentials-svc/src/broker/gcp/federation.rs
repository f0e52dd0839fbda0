//! GCP workload identity federation: the subject token is read from the credential's file
//! (fresh for every exchange, so a rotated token is picked up), exchanged at STS
//! (`grant_type=…:token-exchange`, fields in google-auth's order) for a federated access
//! token, then, when the credential names a service account, exchanged again through IAM
//! Credentials `generateAccessToken` for that account's token (impersonation).
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{GcpGrantIssuer, SCOPES};
use crate::broker::oauth;
use crate::broker::token_files::refused;
use crate::model::{CredentialSecret, CredentialsError};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// STS tokens are asked for with the cloud-platform scope (as google-auth does).
const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The access token (and its expiry) for an `external_account` credential.
pub(super) async fn exchange(
    issuer: &GcpGrantIssuer,
    secret: &CredentialSecret,
) -> Result<(SecretString, Option<OffsetDateTime>), CredentialsError> {
    let CredentialSecret::GcpExternal {
        audience,
        subject_token_type,
        credential_file,
        json_field,
        impersonate,
        ..
    } = secret
    else {
        return Err(CredentialsError::FailedPrecondition(
            "not an external_account credential".into(),
        ));
    };
    let subject = subject_token(issuer, credential_file, json_field.as_deref()).await?;
    let fields = [
        ("grant_type", TOKEN_EXCHANGE),
        ("audience", audience.as_str()),
        ("scope", CLOUD_PLATFORM_SCOPE),
        ("requested_token_type", ACCESS_TOKEN_TYPE),
        ("subject_token", subject.expose_secret()),
        ("subject_token_type", subject_token_type.as_str()),
    ];
    let answer = issuer
        .client
        .post_form(&issuer.endpoints.sts_url, &fields, "Google STS")
        .await?;
    let federated = oauth::access_token(&answer, "Google STS")?;
    let Some(email) = impersonate else {
        return Ok((federated, oauth::expiry(&answer)));
    };
    let url = format!(
        "{}/v1/projects/-/serviceAccounts/{email}:generateAccessToken",
        issuer.endpoints.iam_credentials_url.trim_end_matches('/')
    );
    let body = json!({ "scope": SCOPES, "lifetime": "3600s" });
    let answer = issuer
        .client
        .post_json(&url, &federated, &body, "Google IAM Credentials")
        .await?;
    let token = answer
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(|t| SecretString::from(t.to_owned()))
        .ok_or_else(|| {
            CredentialsError::Unavailable(
                "Google IAM Credentials: the answer holds no accessToken".into(),
            )
        })?;
    let expires = answer
        .get("expireTime")
        .and_then(Value::as_str)
        .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
    Ok((token, expires))
}

/// The subject token: the file's text, or one field of it when the file is JSON. What is
/// wrong with the file goes to the log, not to the caller.
async fn subject_token(
    issuer: &GcpGrantIssuer,
    path: &str,
    json_field: Option<&str>,
) -> Result<SecretString, CredentialsError> {
    const WHAT: &str = "the subject token file";
    let raw = issuer.token_files.read(path, WHAT).await?;
    let Some(field) = json_field else {
        return Ok(raw);
    };
    let field_value = serde_json::from_str::<Value>(raw.expose_secret())
        .ok()
        .and_then(|doc| doc.get(field).and_then(Value::as_str).map(str::to_owned))
        .filter(|t| !t.is_empty());
    field_value.map(SecretString::from).ok_or_else(|| {
        tracing::warn!(
            file = path,
            field,
            "{WHAT} is not JSON with that string field"
        );
        refused(WHAT)
    })
}
