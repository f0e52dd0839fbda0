//! GCP credentials: service-account keys, pasted as-is (`service_account`), and workload
//! identity federation's `external_account` files with an explicit project id (`external`).
//! This module reads the document's `type` and hands it to one child; the children share
//! only `is_project_id` from here and never import each other.
use secrecy::{ExposeSecret, SecretString};

use super::json::{RawObject, parse_object};
use super::{CredentialSecret, FieldError, MAX_INPUT_BYTES};

mod external;
mod service_account;

/// Validates the pasted document; `type` is checked before unknown keys so that another
/// credential format is reported as such rather than as a stray field.
/// `project_id` is the operator's explicit project: required for `external_account`,
/// ignored for a service-account key (which names its own).
pub(super) fn parse(json: &SecretString, project_id: &str) -> Result<CredentialSecret, FieldError> {
    let obj = parse_object("gcp.json", json.expose_secret(), MAX_INPUT_BYTES)?;
    if check_type(&obj)? {
        return external::parse(&obj, json, json.expose_secret(), project_id);
    }
    service_account::parse(&obj, json)
}

/// `Ok(true)` for an `external_account` file, `Ok(false)` for a service-account key.
fn check_type(obj: &RawObject) -> Result<bool, FieldError> {
    match obj.opt_str("type")? {
        Some("service_account") => Ok(false),
        Some("external_account") => Ok(true),
        _ => Err(FieldError::new(
            obj.path("type"),
            "only service_account keys and external_account (workload identity federation) files are supported",
        )),
    }
}

/// `^[a-z][a-z0-9-]{4,28}[a-z0-9]$`.
fn is_project_id(id: &str) -> bool {
    let b = id.as_bytes();
    (6..=30).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[b.len() - 1] != b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_id_bounds_and_charset() {
        assert!(is_project_id("my-proj"));
        assert!(is_project_id(&format!("a{}", "b".repeat(29))));
        assert!(!is_project_id(&format!("a{}", "b".repeat(30))));
        assert!(!is_project_id("abcde"));
        assert!(!is_project_id("1abcdef"));
        assert!(!is_project_id("abcdef-"));
        assert!(!is_project_id("abCdef"));
    }
}
