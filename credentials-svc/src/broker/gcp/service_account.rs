//! A service-account key's exchange: an RS256 JWT assertion signed with the key, traded for
//! an access token with the JWT-bearer grant at the OAuth endpoint, header and claims in
//! google-auth's field order.
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::Value;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use super::{DEFAULT_TOKEN_URL, GcpGrantIssuer, SCOPES};
use crate::broker::oauth;
use crate::model::{CredentialSecret, CredentialsError};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Lifetime of an assertion (Google's maximum).
const ASSERTION_SECONDS: i64 = 3600;

/// The access token (and its expiry) for a service-account key.
pub(super) async fn exchange(
    issuer: &GcpGrantIssuer,
    secret: &CredentialSecret,
) -> Result<(SecretString, Option<OffsetDateTime>), CredentialsError> {
    let CredentialSecret::Gcp {
        client_email,
        private_key_id,
        private_key,
        ..
    } = secret
    else {
        return Err(CredentialsError::FailedPrecondition(
            "not a service-account key".into(),
        ));
    };
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let assertion = assertion(client_email, private_key_id, private_key, now)?;
    let fields = [
        ("assertion", assertion.expose_secret()),
        ("grant_type", JWT_BEARER),
    ];
    let answer = issuer
        .client
        .post_form(&issuer.endpoints.token_url, &fields, "Google OAuth")
        .await?;
    Ok((
        oauth::access_token(&answer, "Google OAuth")?,
        oauth::expiry(&answer),
    ))
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
        s(&SCOPES.join(" "))
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
