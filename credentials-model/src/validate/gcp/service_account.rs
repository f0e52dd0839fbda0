//! A GCP service-account key, pasted as-is. `token_uri` is pinned to Google: a key pointing
//! elsewhere would make us send a signed assertion to whoever wrote it.
use secrecy::SecretString;

use super::is_project_id;
use crate::validate::json::RawObject;
use crate::validate::text::{all_of, check_len, empty, is_base64, is_lower_hex, require_graphic};
use crate::validate::{CredentialSecret, FieldError};

/// Every key a service-account key file may carry.
const KEYS: [&str; 11] = [
    "type",
    "project_id",
    "private_key_id",
    "private_key",
    "client_email",
    "client_id",
    "auth_uri",
    "token_uri",
    "auth_provider_x509_cert_url",
    "client_x509_cert_url",
    "universe_domain",
];
/// The only token endpoints a key may name.
const TOKEN_URIS: [&str; 2] = [
    "https://oauth2.googleapis.com/token",
    "https://accounts.google.com/o/oauth2/token",
];
const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";
/// Longest informational value (`client_id`, `auth_uri`, certificate URLs).
const MAX_INFO_BYTES: usize = 2048;

/// Validates a service-account key (`obj` is its strict top-level view, `json` the text).
pub(super) fn parse(obj: &RawObject, json: &SecretString) -> Result<CredentialSecret, FieldError> {
    obj.deny_unknown(&KEYS)?;
    let project_id = required(obj, "project_id")?;
    if !is_project_id(project_id) {
        return Err(FieldError::new(
            obj.path("project_id"),
            "must be 6 to 30 lowercase letters, digits or hyphens, starting with a letter and not ending with a hyphen",
        ));
    }
    let private_key_id = required(obj, "private_key_id")?;
    if !all_of(private_key_id, 16, 64, is_lower_hex) {
        return Err(FieldError::new(
            obj.path("private_key_id"),
            "must be 16 to 64 lowercase hexadecimal digits",
        ));
    }
    let private_key = private_key(obj)?;
    let client_email = client_email(obj)?;
    let token_uri = required(obj, "token_uri")?;
    if !TOKEN_URIS.contains(&token_uri) {
        return Err(FieldError::new(
            obj.path("token_uri"),
            "must be https://oauth2.googleapis.com/token or \
             https://accounts.google.com/o/oauth2/token",
        ));
    }
    check_informational(obj)?;
    Ok(CredentialSecret::Gcp {
        project_id: project_id.to_owned(),
        client_email: client_email.to_owned(),
        private_key_id: private_key_id.to_owned(),
        private_key,
        token_uri: token_uri.to_owned(),
        key_json: json.clone(),
    })
}

/// A required non-empty string of printable ASCII without whitespace.
fn required<'o>(obj: &'o RawObject, key: &str) -> Result<&'o str, FieldError> {
    let value = obj.req_str(key)?;
    if value.is_empty() {
        return Err(empty(&obj.path(key)));
    }
    require_graphic(&obj.path(key), value)?;
    Ok(value)
}

/// A PKCS#8 PEM block whose body is base64 lines with padding only at the very end.
fn private_key(obj: &RawObject) -> Result<SecretString, FieldError> {
    let field = obj.path("private_key");
    let pem = obj.req_str("private_key")?;
    let trimmed = pem.trim_ascii();
    if trimmed.is_empty() {
        return Err(empty(&field));
    }
    let Some(rest) = trimmed.strip_prefix(PEM_BEGIN) else {
        return Err(FieldError::new(
            field,
            format!("must start with {PEM_BEGIN}"),
        ));
    };
    let Some(body) = rest.strip_suffix(PEM_END) else {
        return Err(FieldError::new(field, format!("must end with {PEM_END}")));
    };
    if !is_base64_body(body) {
        return Err(FieldError::new(
            field,
            "must have a body of base64 lines (at most 76 characters each)",
        ));
    }
    Ok(SecretString::from(pem))
}

fn is_base64_body(body: &str) -> bool {
    let body = body
        .strip_prefix("\r\n")
        .or_else(|| body.strip_prefix('\n'));
    let Some(body) = body.and_then(|b| b.strip_suffix('\n')) else {
        return false;
    };
    let body = body.strip_suffix('\r').unwrap_or(body);
    let (mut total, mut padding) = (0usize, 0usize);
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.len() > 76 || !line.bytes().all(is_base64) {
            return false;
        }
        // Padding is legal only at the very end: no data after an `=`, at most two of them.
        for b in line.bytes() {
            if b == b'=' {
                padding += 1;
            } else if padding > 0 {
                return false;
            }
        }
        total += line.len();
    }
    padding <= 2 && total % 4 == 0
}

/// `<name>@<domain>.gserviceaccount.com`, e.g. `sa@proj.iam.gserviceaccount.com` or the
/// default compute account `123-compute@developer.gserviceaccount.com`.
fn client_email(obj: &RawObject) -> Result<&str, FieldError> {
    let email = required(obj, "client_email")?;
    let ok = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            let label = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
            !local.is_empty()
                && local.bytes().all(label)
                && domain
                    .strip_suffix(".gserviceaccount.com")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| label(b) || b == b'.'))
        });
    if !ok {
        return Err(FieldError::new(
            obj.path("client_email"),
            "must be a service-account email ending in .gserviceaccount.com",
        ));
    }
    Ok(email)
}

/// Keys we do not use are still type- and charset-checked; `universe_domain` must be the
/// public one, since the pinned token endpoints belong to it.
fn check_informational(obj: &RawObject) -> Result<(), FieldError> {
    for key in [
        "client_id",
        "auth_uri",
        "auth_provider_x509_cert_url",
        "client_x509_cert_url",
    ] {
        if let Some(value) = obj.opt_str(key)? {
            check_len(&obj.path(key), value, MAX_INFO_BYTES)?;
            require_graphic(&obj.path(key), value)?;
        }
    }
    match obj.opt_str("universe_domain")? {
        None | Some("googleapis.com") => Ok(()),
        Some(_) => Err(FieldError::new(
            obj.path("universe_domain"),
            "must be googleapis.com",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_body_rejects_blank_lines_inner_padding_and_truncation() {
        assert!(is_base64_body("\nQUJD\nREVG\n"));
        assert!(is_base64_body("\r\nQUJD\r\nREU=\r\n"));
        assert!(!is_base64_body("\nQUJD\n\nREVG\n"));
        assert!(!is_base64_body("\nQU=D\n"));
        assert!(!is_base64_body("\nQUJ=\nREVG\n"));
        assert!(!is_base64_body("\nQUJDR\n"));
        assert!(!is_base64_body("QUJD"));
        assert!(!is_base64_body("\n\n"));
    }
}
