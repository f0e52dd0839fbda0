//! Target `credential_plaintext`: the plaintext document a stored credential decrypts to
//! (`CredentialSecret::from_plaintext`), which a corrupted or tampered row reaches.
//!
//! Bytes: a provider selector byte, then the document.
//!
//! Properties: no panic; an error repeats no string of the document; an accepted document
//! encodes back to a document that decodes to the same bytes again (the encoding is
//! canonical after one round), and `Debug` shows none of its secrets.
use levelrail_credentials_model::ProviderId;
use levelrail_credentials_model::validate::CredentialSecret;

use crate::credentials::{secrets_of, strings_in};
use crate::opaque::{assert_hides, assert_no_echo};

/// Whether the document decodes.
pub fn accepts(data: &[u8]) -> bool {
    data.split_first().is_some_and(|(&selector, document)| {
        let provider = ProviderId::ALL[usize::from(selector) % ProviderId::ALL.len()];
        CredentialSecret::from_plaintext(provider, document).is_ok()
    })
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some((&selector, document)) = data.split_first() else {
        return;
    };
    let provider = ProviderId::ALL[usize::from(selector) % ProviderId::ALL.len()];
    match CredentialSecret::from_plaintext(provider, document) {
        Err(_) => {
            let Ok(text) = std::str::from_utf8(document) else {
                return;
            };
            let mut values = Vec::new();
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
                strings_in(&json, &mut values);
            }
            assert_no_echo(&[text.to_owned()], &values, "a plaintext error", |f| {
                CredentialSecret::from_plaintext(provider, f[0].as_bytes())
                    .err()
                    .map(|e| e.to_string())
            });
        }
        Ok(secret) => {
            assert_eq!(secret.provider(), provider);
            assert_hides(
                &format!("{secret:?}"),
                &secrets_of(&secret),
                "Debug of a secret",
            );
            let once = secret.to_plaintext();
            let again = CredentialSecret::from_plaintext(provider, &once)
                .expect("an encoded document decodes");
            assert_eq!(again.to_plaintext().as_slice(), once.as_slice());
            assert_eq!(again.identity(), secret.identity());
        }
    }
}
