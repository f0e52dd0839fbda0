//! The fake Google token endpoints: OAuth 2.0 (`POST /token`, the JWT-bearer grant of a
//! service-account key, the RS256 signature checked against the key's public half, `kid`,
//! `iss`, `aud` and lifetime checked), STS (`POST /v1/token`, the token exchange of workload
//! identity federation) and IAM Credentials (`generateAccessToken`, service-account
//! impersonation with the federated token). Errors use Google's shapes.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::signature::{self, KeyPair as _};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::Shared;
use super::state::{TokenKind, error};
use crate::fakes::edge::{Call, Reply, lock};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The audience Google requires in service-account assertions, whatever the endpoint.
pub(crate) const OAUTH_AUDIENCE: &str = "https://oauth2.googleapis.com/token";
const COMPUTE_SCOPES: [&str; 2] = [
    "https://www.googleapis.com/auth/compute",
    "https://www.googleapis.com/auth/cloud-platform",
];

/// The scopes that let a token read the Cloud Billing catalog (`services.skus.list`).
const BILLING_SCOPES: [&str; 3] = [
    "https://www.googleapis.com/auth/cloud-billing",
    "https://www.googleapis.com/auth/cloud-billing.readonly",
    "https://www.googleapis.com/auth/cloud-platform",
];

/// Whether `scopes` hold one of `BILLING_SCOPES`.
fn reads_billing<'a>(mut scopes: impl Iterator<Item = &'a str>) -> bool {
    scopes.any(|s| BILLING_SCOPES.contains(&s))
}

/// `POST /token`: a signed service-account assertion for an access token.
pub(crate) fn oauth_token(shared: &Shared, call: &Call) -> Reply {
    let form = call.form();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if call.method != "POST"
        || !call
            .content_type
            .starts_with("application/x-www-form-urlencoded")
    {
        return grant_error(400, "invalid_request", "Expected a form-encoded POST.");
    }
    if field("grant_type") != Some(JWT_BEARER) {
        return grant_error(400, "unsupported_grant_type", "Invalid grant_type.");
    }
    let Some(assertion) = field("assertion") else {
        return grant_error(
            400,
            "invalid_request",
            "Missing required parameter: assertion",
        );
    };
    let scopes = match verify_assertion(shared, assertion) {
        Ok(scopes) => scopes,
        Err(why) => return grant_error(400, "invalid_grant", why),
    };
    let billing = reads_billing(scopes.split(' '));
    let token = issue(shared, TokenKind::ServiceAccount, "sa", billing);
    Reply::json(
        200,
        json!({ "access_token": token, "expires_in": shared.cfg.token_lifetime.as_secs(), "token_type": "Bearer" }),
    )
}

/// The assertion's scopes, once it is verified.
fn verify_assertion(shared: &Shared, jwt: &str) -> Result<String, &'static str> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = jwt.split('.').collect();
    let [h, c, s] = parts.as_slice() else {
        return Err(
            "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.",
        );
    };
    let header: Value = b64
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("Invalid JWT header.")?;
    let claims: Value = b64
        .decode(c)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("Invalid JWT payload.")?;
    let sig = b64.decode(s).map_err(|_| "Invalid JWT Signature.")?;
    if header.get("alg").and_then(Value::as_str) != Some("RS256")
        || header.get("kid").and_then(Value::as_str) != Some(shared.cfg.private_key_id.as_str())
    {
        return Err("Invalid JWT Signature.");
    }
    let public = shared.key.public_key().as_ref().to_vec();
    signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, public)
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "Invalid JWT Signature.")?;
    if claims.get("iss").and_then(Value::as_str) != Some(shared.cfg.client_email.as_str()) {
        return Err("Invalid JWT: the issuer is not the service account.");
    }
    if claims.get("aud").and_then(Value::as_str) != Some(OAUTH_AUDIENCE) {
        return Err("Invalid JWT: the audience must be https://oauth2.googleapis.com/token.");
    }
    let scopes = claims
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !scopes.split(' ').any(|s| COMPUTE_SCOPES.contains(&s)) {
        return Err("Invalid JWT: no scope that grants Compute Engine access.");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let (iat, exp) = (
        claims.get("iat").and_then(Value::as_i64).unwrap_or(0),
        claims.get("exp").and_then(Value::as_i64).unwrap_or(0),
    );
    if iat > now + 60 || exp < now || exp - iat > 3600 {
        return Err(
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.",
        );
    }
    Ok(scopes.to_owned())
}

/// `POST /v1/token`: an external subject token for a federated access token.
pub(crate) fn sts_token(shared: &Shared, call: &Call) -> Reply {
    let form = call.form();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if call.method != "POST"
        || !call
            .content_type
            .starts_with("application/x-www-form-urlencoded")
    {
        return grant_error(400, "invalid_request", "Expected a form-encoded POST.");
    }
    if field("grant_type") != Some(TOKEN_EXCHANGE)
        || field("requested_token_type") != Some(ACCESS_TOKEN_TYPE)
    {
        return grant_error(
            400,
            "invalid_request",
            "Invalid grant_type or requested_token_type.",
        );
    }
    if field("audience") != Some(shared.cfg.audience.as_str()) {
        return grant_error(
            400,
            "invalid_target",
            "The target service indicated by the \"audience\" parameters is invalid.",
        );
    }
    if field("subject_token_type") != Some(shared.cfg.subject_token_type.as_str()) {
        return grant_error(400, "invalid_request", "Invalid subject_token_type.");
    }
    let scope_ok =
        field("scope").is_some_and(|s| s.split(' ').any(|x| COMPUTE_SCOPES.contains(&x)));
    let subject = field("subject_token").unwrap_or_default();
    let trusted = lock(&shared.settings).trusted_subjects.clone();
    if !scope_ok || subject.is_empty() || trusted.is_some_and(|t| !t.iter().any(|x| x == subject)) {
        return grant_error(
            400,
            "invalid_grant",
            "The subject token is not trusted by the workload identity pool provider.",
        );
    }
    let billing = reads_billing(field("scope").unwrap_or_default().split(' '));
    let token = issue(shared, TokenKind::Federated, "sts", billing);
    Reply::json(
        200,
        json!({ "access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE, "token_type": "Bearer", "expires_in": shared.cfg.token_lifetime.as_secs() }),
    )
}

/// `POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken`.
pub(crate) fn generate_access_token(shared: &Shared, call: &Call, email: &str) -> Reply {
    let token = call
        .authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "));
    let valid = token
        .and_then(|t| lock(&shared.inventory).tokens.get(t).copied())
        .is_some_and(|(exp, _)| exp > SystemTime::now());
    if !valid {
        return Reply::json(
            401,
            error(
                401,
                "authError",
                "Request had invalid authentication credentials.",
            ),
        );
    }
    if email != shared.cfg.client_email {
        return Reply::json(
            403,
            error(
                403,
                "forbidden",
                "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
            ),
        );
    }
    let scopes_ok = call
        .json
        .get("scope")
        .and_then(Value::as_array)
        .is_some_and(|s| {
            s.iter()
                .any(|x| x.as_str().is_some_and(|x| COMPUTE_SCOPES.contains(&x)))
        });
    if !scopes_ok {
        return Reply::json(400, error(400, "badRequest", "Scope required."));
    }
    let billing = reads_billing(
        call.json
            .get("scope")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    let lifetime = shared.cfg.token_lifetime;
    let token = issue(shared, TokenKind::Impersonated, "imp", billing);
    let expire = OffsetDateTime::from(SystemTime::now() + lifetime)
        .replace_nanosecond(0)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default();
    Reply::json(200, json!({ "accessToken": token, "expireTime": expire }))
}

/// A fresh access token of `kind`, valid for the configured lifetime; `billing`: its
/// scopes let it read the Cloud Billing catalog.
pub(crate) fn issue(shared: &Shared, kind: TokenKind, tag: &str, billing: bool) -> String {
    let mut inv = lock(&shared.inventory);
    let token = format!(
        "ya29.fake-{tag}-{:06}-{}",
        inv.next(),
        uuid::Uuid::new_v4().simple()
    );
    inv.tokens.insert(
        token.clone(),
        (SystemTime::now() + shared.cfg.token_lifetime, kind),
    );
    if billing {
        inv.billing_tokens.insert(token.clone());
    }
    token
}

/// Whether the bearer token of `call` was granted a scope that reads the billing catalog.
pub(crate) fn billing_scope(shared: &Shared, call: &Call) -> bool {
    call.authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .is_some_and(|t| lock(&shared.inventory).billing_tokens.contains(t))
}

/// The bearer token of `call`, if Compute accepts it.
pub(crate) fn compute_access(shared: &Shared, call: &Call) -> Result<(), Reply> {
    let token = call
        .authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "));
    let found = token.and_then(|t| lock(&shared.inventory).tokens.get(t).copied());
    let direct = lock(&shared.settings).federated_direct_access;
    match found {
        Some((exp, _)) if exp <= SystemTime::now() => Err(Reply::json(
            401,
            error(
                401,
                "authError",
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            ),
        )),
        Some((_, TokenKind::Federated)) if !direct => Err(Reply::json(
            403,
            error(
                403,
                "forbidden",
                "Required 'compute.instances.list' permission for the federated principal.",
            ),
        )),
        Some(_) => Ok(()),
        None => Err(Reply::json(
            401,
            error(
                401,
                "authError",
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            ),
        )),
    }
}

fn grant_error(status: u16, error: &str, description: &str) -> Reply {
    Reply::json(
        status,
        json!({ "error": error, "error_description": description }),
    )
}

/// How long a token lives by default.
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(3599);
