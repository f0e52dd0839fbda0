//! Validation of the free-form values agents and operators send: provision ids, reported
//! addresses and agent versions, certificate signing requests. Errors name the field and
//! never echo more than a sanitized prefix.
use crate::model::{FieldError, sanitized_prefix};

/// Most addresses a node may report.
const MAX_ADDRESSES: usize = 32;
/// Longest address (a DNS name).
const MAX_ADDRESS_LEN: usize = 253;
/// Longest agent or Docker version string.
const MAX_VERSION_LEN: usize = 64;
/// Longest provision id.
const MAX_PROVISION_ID_LEN: usize = 128;
/// Largest CSR accepted (a 4096-bit RSA CSR is about 1.7 KiB).
const MAX_CSR_LEN: usize = 16 * 1024;

fn printable(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_graphic())
}

/// A provision id: 1..=128 characters of `[A-Za-z0-9_.-]`.
pub(super) fn provision_id(value: &str) -> Result<(), FieldError> {
    let ok = !value.is_empty()
        && value.len() <= MAX_PROVISION_ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        let msg = format!(
            "{} must be 1-128 characters of letters, digits, '_', '-' and '.'",
            sanitized_prefix(value)
        );
        Err(FieldError::new("provision_id", msg))
    }
}

/// Addresses and agent version of an enrollment or heartbeat: at most 32 addresses of
/// 1..=253 printable ASCII characters, a version of at most 64.
pub(super) fn report(addresses: &[String], agent_version: &str) -> Result<(), FieldError> {
    if addresses.len() > MAX_ADDRESSES {
        return Err(FieldError::new(
            "addresses",
            format!("at most {MAX_ADDRESSES} addresses"),
        ));
    }
    for a in addresses {
        if a.is_empty() || a.len() > MAX_ADDRESS_LEN || !printable(a) {
            let msg = format!(
                "{} must be 1-253 printable ASCII characters",
                sanitized_prefix(a)
            );
            return Err(FieldError::new("addresses", msg));
        }
    }
    version("agent_version", agent_version)
}

/// A heartbeat's Docker engine version (when an engine answered): at most 64 printable
/// ASCII characters.
pub(super) fn docker_version(value: &str) -> Result<(), FieldError> {
    version("docker_version", value)
}

fn version(field: &'static str, value: &str) -> Result<(), FieldError> {
    if value.len() > MAX_VERSION_LEN || !printable(value) {
        let msg = format!(
            "{} must be at most 64 printable ASCII characters",
            sanitized_prefix(value)
        );
        return Err(FieldError::new(field, msg));
    }
    Ok(())
}

/// A PEM certificate signing request whose self-signature verifies.
pub(super) fn csr(csr_pem: &str) -> Result<(), FieldError> {
    if csr_pem.len() > MAX_CSR_LEN {
        return Err(FieldError::new("csr_pem", "is larger than 16 KiB"));
    }
    rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
        .map(drop)
        .map_err(|_| FieldError::new("csr_pem", "is not a valid PEM certificate signing request"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provision_ids_of_safe_characters_pass_and_others_fail() {
        assert!(provision_id("prv_0123-abc.1").is_ok());
        for bad in ["", "prv 1", "prv/1", "'; DROP TABLE x;--", &"p".repeat(129)] {
            assert_eq!(provision_id(bad).expect_err(bad).field, "provision_id");
        }
    }

    #[test]
    fn reports_with_bad_addresses_or_versions_name_the_field() {
        assert!(
            report(
                &[
                    "10.0.0.1".into(),
                    "fe80::1%eth0".into(),
                    "web.example".into()
                ],
                "1.0.0"
            )
            .is_ok()
        );
        assert!(report(&[], "").is_ok());
        assert_eq!(
            report(&["".into()], "1").expect_err("empty").field,
            "addresses"
        );
        assert_eq!(
            report(&["a b".into()], "1").expect_err("space").field,
            "addresses"
        );
        assert_eq!(
            report(&vec!["a".into(); 33], "1").expect_err("many").field,
            "addresses"
        );
        assert_eq!(
            report(&[], &"v".repeat(65)).expect_err("long").field,
            "agent_version"
        );
        assert_eq!(
            report(&[], "1.0\n").expect_err("newline").field,
            "agent_version"
        );
        assert!(docker_version("26.1.5+dfsg1").is_ok());
        assert_eq!(
            docker_version("26 1").expect_err("space").field,
            "docker_version"
        );
    }

    #[test]
    fn a_csr_must_parse_and_be_small() {
        assert_eq!(csr("not a csr").expect_err("garbage").field, "csr_pem");
        assert_eq!(
            csr(&"A".repeat(MAX_CSR_LEN + 1)).expect_err("huge").field,
            "csr_pem"
        );
    }
}
