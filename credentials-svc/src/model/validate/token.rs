//! Bare API tokens: Hetzner Cloud project tokens and DigitalOcean personal access tokens.
use secrecy::{ExposeSecret, SecretString};

use super::text::{all_of, is_lower_hex, trimmed_token};
use super::{CredentialSecret, FieldError};
use crate::model::ProviderId;

/// Validates a token for `provider`, which must be Hetzner or DigitalOcean.
pub(super) fn parse(
    provider: ProviderId,
    token: &SecretString,
) -> Result<CredentialSecret, FieldError> {
    let (field, ok, rule): (&str, fn(&str) -> bool, &str) = match provider {
        ProviderId::Hetzner => (
            "hetzner.token",
            is_hetzner_token,
            "must be 32 to 128 ASCII letters or digits (a Hetzner Cloud API token)",
        ),
        ProviderId::DigitalOcean => (
            "digitalocean.token",
            is_digitalocean_token,
            "must be 64 lowercase hexadecimal digits, optionally after dop_v1_ or doo_v1_",
        ),
        ProviderId::Aws | ProviderId::Azure | ProviderId::Gcp => {
            return Err(FieldError::new(
                "provider",
                "a bare token is accepted only for hetzner and digitalocean",
            ));
        }
    };
    let trimmed = trimmed_token(field, token.expose_secret())?;
    if !ok(trimmed) {
        return Err(FieldError::new(field, rule));
    }
    Ok(CredentialSecret::Token {
        provider,
        token: SecretString::from(trimmed),
    })
}

/// Hetzner tokens are 64 alphanumerics; accept 32..=128 in case the format grows.
fn is_hetzner_token(token: &str) -> bool {
    all_of(token, 32, 128, |b| b.is_ascii_alphanumeric())
}

/// `^(dop_v1_|doo_v1_)?[0-9a-f]{64}$`: current personal/OAuth tokens and legacy bare hex.
fn is_digitalocean_token(token: &str) -> bool {
    let hex = ["dop_v1_", "doo_v1_"]
        .iter()
        .find_map(|p| token.strip_prefix(p))
        .unwrap_or(token);
    all_of(hex, 64, 64, is_lower_hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digitalocean_accepts_prefixed_and_legacy_forms_only() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(is_digitalocean_token(&hex));
        assert!(is_digitalocean_token(&format!("dop_v1_{hex}")));
        assert!(is_digitalocean_token(&format!("doo_v1_{hex}")));
        assert!(!is_digitalocean_token(&format!("dor_v1_{hex}")));
        assert!(!is_digitalocean_token(&format!(
            "dop_v1_dop_v1_{}",
            &hex[..57]
        )));
        assert!(!is_digitalocean_token(&hex.to_ascii_uppercase()));
    }

    #[test]
    fn hetzner_length_bounds_are_inclusive() {
        assert!(is_hetzner_token(&"a".repeat(32)));
        assert!(is_hetzner_token(&"a".repeat(128)));
        assert!(!is_hetzner_token(&"a".repeat(31)));
        assert!(!is_hetzner_token(&"a".repeat(129)));
    }
}
