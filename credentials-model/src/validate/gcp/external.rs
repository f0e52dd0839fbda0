//! GCP workload identity federation: Google's `external_account` credential file (no secret:
//! it names a pool provider, a token file and optionally a service account to impersonate)
//! plus the project id the operator gives next to it, since the format has no project field.
//! Only file-sourced subject tokens are accepted, the STS endpoint is pinned to Google, and
//! impersonation only through `iamcredentials.googleapis.com`, so the subject token is never
//! sent anywhere else.
use secrecy::SecretString;
use serde_json::Value;

use super::is_project_id;
use crate::validate::json::RawObject;
use crate::validate::text::{check_len, empty, require_graphic, require_printable};
use crate::validate::{CredentialSecret, FieldError};

/// Every top-level key an external account file may carry.
const KEYS: [&str; 10] = [
    "type",
    "audience",
    "subject_token_type",
    "token_url",
    "credential_source",
    "service_account_impersonation_url",
    "service_account_impersonation",
    "token_info_url",
    "quota_project_id",
    "universe_domain",
];
/// The only STS endpoint accepted.
pub(crate) const STS_TOKEN_URL: &str = "https://sts.googleapis.com/v1/token";
const IMPERSONATION_PREFIX: &str =
    "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/";
const IMPERSONATION_SUFFIX: &str = ":generateAccessToken";
const SUBJECT_TYPES: [&str; 3] = [
    "urn:ietf:params:oauth:token-type:jwt",
    "urn:ietf:params:oauth:token-type:id_token",
    "urn:ietf:params:oauth:token-type:saml2",
];
const MAX_FIELD_BYTES: usize = 2048;

/// Validates an `external_account` document (`obj` is its strict top-level view, `json` the
/// text) with the operator's explicit `project_id`.
pub(super) fn parse(
    obj: &RawObject,
    json: &SecretString,
    text: &str,
    project_id: &str,
) -> Result<CredentialSecret, FieldError> {
    obj.deny_unknown(&KEYS)?;
    let project = project_id.trim();
    if project.is_empty() {
        return Err(FieldError::new(
            "gcp.project_id",
            "is required for an external_account credential (the file names no project)",
        ));
    }
    if !is_project_id(project) {
        return Err(FieldError::new(
            "gcp.project_id",
            "must be 6 to 30 lowercase letters, digits or hyphens, starting with a letter and not ending with a hyphen",
        ));
    }
    let audience = field(obj, "audience")?;
    let workload = audience
        .strip_prefix("//iam.googleapis.com/projects/")
        .is_some_and(|rest| {
            rest.contains("/workloadIdentityPools/") && rest.contains("/providers/")
        });
    if !workload {
        return Err(FieldError::new(
            obj.path("audience"),
            "must name a workload identity pool provider (//iam.googleapis.com/projects/…/workloadIdentityPools/…/providers/…)",
        ));
    }
    let subject_token_type = field(obj, "subject_token_type")?;
    if !SUBJECT_TYPES.contains(&subject_token_type) {
        return Err(FieldError::new(
            obj.path("subject_token_type"),
            "must be the jwt, id_token or saml2 token type (only file-sourced tokens are supported)",
        ));
    }
    if field(obj, "token_url")? != STS_TOKEN_URL {
        return Err(FieldError::new(
            obj.path("token_url"),
            "must be https://sts.googleapis.com/v1/token",
        ));
    }
    let impersonate = match obj.opt_str("service_account_impersonation_url")? {
        None => None,
        Some(url) => Some(impersonated_email(obj, url)?),
    };
    for key in ["token_info_url", "quota_project_id"] {
        if let Some(v) = obj.opt_str(key)? {
            check_len(&obj.path(key), v, MAX_FIELD_BYTES)?;
            require_graphic(&obj.path(key), v)?;
        }
    }
    match obj.opt_str("universe_domain")? {
        None | Some("googleapis.com") => {}
        Some(_) => {
            return Err(FieldError::new(
                obj.path("universe_domain"),
                "must be googleapis.com",
            ));
        }
    }
    // The nested objects carry no secret; read them from the (already size- and
    // depth-checked) text.
    let doc: Value =
        serde_json::from_str(text).map_err(|_| FieldError::new("gcp.json", "is not valid JSON"))?;
    let (credential_file, json_field) = credential_source(&doc)?;
    if let Some(imp) = doc.get("service_account_impersonation") {
        let ok = imp.as_object().is_some_and(|m| {
            m.iter().all(|(k, v)| {
                k == "token_lifetime_seconds"
                    && v.as_u64().is_some_and(|s| (600..=43200).contains(&s))
            })
        });
        if !ok {
            return Err(FieldError::new(
                "gcp.json.service_account_impersonation",
                "may only hold token_lifetime_seconds (600 to 43200)",
            ));
        }
    }
    Ok(CredentialSecret::GcpExternal {
        project_id: project.to_owned(),
        audience: audience.to_owned(),
        subject_token_type: subject_token_type.to_owned(),
        credential_file,
        json_field,
        impersonate,
        key_json: json.clone(),
    })
}

fn field<'o>(obj: &'o RawObject, key: &str) -> Result<&'o str, FieldError> {
    let v = obj.req_str(key)?;
    if v.is_empty() {
        return Err(empty(&obj.path(key)));
    }
    check_len(&obj.path(key), v, MAX_FIELD_BYTES)?;
    require_graphic(&obj.path(key), v)?;
    Ok(v)
}

/// The service account of `…/serviceAccounts/<email>:generateAccessToken`.
fn impersonated_email(obj: &RawObject, url: &str) -> Result<String, FieldError> {
    let bad = || {
        FieldError::new(
            obj.path("service_account_impersonation_url"),
            "must be https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/<email>:generateAccessToken",
        )
    };
    let email = url
        .strip_prefix(IMPERSONATION_PREFIX)
        .and_then(|r| r.strip_suffix(IMPERSONATION_SUFFIX))
        .ok_or_else(bad)?;
    let label = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.';
    let ok = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && local.bytes().all(label)
                && domain.ends_with(".gserviceaccount.com")
                && domain.bytes().all(label)
        });
    if !ok {
        return Err(bad());
    }
    Ok(email.to_owned())
}

/// `credential_source`: `{"file": "/abs/path"}` with an optional `format` of `text` or
/// `json` (then `subject_token_field_name`).
fn credential_source(doc: &Value) -> Result<(String, Option<String>), FieldError> {
    let at = "gcp.json.credential_source";
    let src = doc
        .get("credential_source")
        .and_then(Value::as_object)
        .ok_or_else(|| FieldError::new(at, "is required and must be an object"))?;
    if let Some(k) = src
        .keys()
        .find(|k| !["file", "format"].contains(&k.as_str()))
    {
        let what = if [
            "url",
            "executable",
            "environment_id",
            "headers",
            "regional_cred_verification_url",
            "certificate",
        ]
        .contains(&k.as_str())
        {
            "only file-sourced subject tokens are supported"
        } else {
            "has an unknown key"
        };
        return Err(FieldError::new(at, what));
    }
    let path = src
        .get("file")
        .and_then(Value::as_str)
        .ok_or_else(|| FieldError::new(format!("{at}.file"), "is required"))?;
    require_printable(&format!("{at}.file"), path)?;
    if !path.starts_with('/') || path.split('/').any(|s| s == "..") || path.len() > 4096 {
        return Err(FieldError::new(
            format!("{at}.file"),
            "must be an absolute path without a .. segment",
        ));
    }
    let json_field = match src.get("format") {
        None => None,
        Some(f) => match (
            f.get("type").and_then(Value::as_str),
            f.get("subject_token_field_name").and_then(Value::as_str),
        ) {
            (Some("text"), None) => None,
            (Some("json"), Some(name)) if !name.is_empty() && name.len() <= 256 => {
                Some(name.to_owned())
            }
            _ => {
                return Err(FieldError::new(
                    format!("{at}.format"),
                    "must be {\"type\":\"text\"} or {\"type\":\"json\",\"subject_token_field_name\":…}",
                ));
            }
        },
    };
    Ok((path.to_owned(), json_field))
}
