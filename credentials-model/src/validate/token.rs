//! Bare API tokens, for the clouds whose credential is one (Hetzner Cloud project tokens,
//! DigitalOcean personal access tokens): each checked against its cloud's rule
//! ([`levelrail_types::TokenShape`]).
use levelrail_types::CredentialShape;
use secrecy::{ExposeSecret, SecretString};

use super::text::trimmed_token;
use super::{CredentialSecret, FieldError};
use crate::ProviderId;

/// Validates a token for `provider`, whose credential must be a token.
pub(super) fn parse(
    provider: ProviderId,
    token: &SecretString,
) -> Result<CredentialSecret, FieldError> {
    let CredentialShape::Token(shape) = provider.credential_shape() else {
        return Err(FieldError::new(
            "provider",
            format!("a bare token is not a {provider} credential"),
        ));
    };
    let field = format!("{provider}.token");
    let trimmed = trimmed_token(&field, token.expose_secret())?;
    if !shape.accepts(trimmed) {
        return Err(FieldError::new(field, shape.rule));
    }
    Ok(CredentialSecret::Token {
        provider,
        token: SecretString::from(trimmed),
    })
}
