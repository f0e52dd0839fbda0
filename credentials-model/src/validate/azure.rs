//! Azure service principals: one flat JSON object with GUID ids, a resource group, and a
//! client secret or a federated (workload identity) token file.
use secrecy::{ExposeSecret, SecretString};

use super::json::{RawObject, parse_object};
use super::text::{check_len, empty, guid, require_graphic, require_printable};
use super::{CredentialSecret, FieldError, MAX_INPUT_BYTES};

/// Every key the object may carry.
const KEYS: [&str; 6] = [
    "tenant_id",
    "client_id",
    "client_secret",
    "federated_token_file",
    "subscription_id",
    "resource_group",
];
const MAX_CLIENT_SECRET_BYTES: usize = 1024;
const MAX_TOKEN_FILE_BYTES: usize = 4096;

/// Validates the pasted Azure JSON. Checks run in a fixed order (unknown keys, then the
/// fields in `KEYS` order) so the reported field is deterministic.
pub(super) fn parse(json: &SecretString) -> Result<CredentialSecret, FieldError> {
    let obj = parse_object("azure.json", json.expose_secret(), MAX_INPUT_BYTES)?;
    obj.deny_unknown(&KEYS)?;
    let tenant_id = guid_field(&obj, "tenant_id")?;
    let client_id = guid_field(&obj, "client_id")?;
    let client_secret = obj
        .opt_str("client_secret")?
        .map(|s| client_secret(&obj, s))
        .transpose()?;
    // Validated even when client_secret wins: a malformed value is still a mistake worth
    // reporting, and nothing lenient gets stored or ignored silently.
    let token_file = obj
        .opt_str("federated_token_file")?
        .map(|p| token_file(&obj, p))
        .transpose()?;
    if client_secret.is_none() && token_file.is_none() {
        return Err(FieldError::new(
            obj.path("client_secret"),
            "is required unless federated_token_file is set",
        ));
    }
    let federated_token_file = if client_secret.is_some() {
        None
    } else {
        token_file
    };
    Ok(CredentialSecret::Azure {
        tenant_id,
        client_id,
        client_secret,
        federated_token_file,
        subscription_id: guid_field(&obj, "subscription_id")?,
        resource_group: resource_group(&obj)?,
    })
}

fn guid_field(obj: &RawObject, key: &str) -> Result<String, FieldError> {
    guid(&obj.path(key), obj.req_str(key)?)
}

fn client_secret(obj: &RawObject, secret: &str) -> Result<SecretString, FieldError> {
    let field = obj.path("client_secret");
    if secret.is_empty() {
        return Err(empty(&field));
    }
    check_len(&field, secret, MAX_CLIENT_SECRET_BYTES)?;
    require_graphic(&field, secret)?;
    Ok(SecretString::from(secret))
}

/// An absolute path with no `..` segment; re-read whenever a fresh token is needed.
fn token_file(obj: &RawObject, path: &str) -> Result<String, FieldError> {
    let field = obj.path("federated_token_file");
    if path.is_empty() {
        return Err(empty(&field));
    }
    check_len(&field, path, MAX_TOKEN_FILE_BYTES)?;
    require_printable(&field, path)?;
    if !path.starts_with('/') {
        return Err(FieldError::new(field, "must be an absolute path"));
    }
    if path.split('/').any(|segment| segment == "..") {
        return Err(FieldError::new(field, "must not contain a .. segment"));
    }
    Ok(path.to_owned())
}

/// 1 to 90 characters of `A-Za-z0-9_.()-`, not ending with `.`.
fn resource_group(obj: &RawObject) -> Result<String, FieldError> {
    let field = obj.path("resource_group");
    let name = obj.req_str("resource_group")?;
    if name.is_empty() {
        return Err(empty(&field));
    }
    require_graphic(&field, name)?;
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"_.()-".contains(&b);
    if name.len() > 90 || !name.bytes().all(allowed) {
        return Err(FieldError::new(
            field,
            "must be 1 to 90 characters of letters, digits, _, ., (, ) or -",
        ));
    }
    if name.ends_with('.') {
        return Err(FieldError::new(field, "must not end with a period"));
    }
    Ok(name.to_owned())
}
