//! Join tokens: `LR1.<ca fingerprint>.<token id>.<secret>`.
//!
//! The id (`njt_` + 16 hex) is public and safe to log; the secret is 32 random bytes,
//! base64url without padding. The control plane stores only SHA-256 of the secret's bytes
//! and compares hashes in constant time. The fingerprint (lowercase hex SHA-256 of the
//! control-plane CA certificate's DER) lets an agent given only the token pin the CA before
//! it sends anything (in the spirit of K3s `K10<hash>::…` tokens and kubeadm's
//! `--discovery-token-ca-cert-hash`).
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore as _;
use secrecy::{ExposeSecret as _, SecretString};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

use super::names::FieldError;

/// The version tag that starts every token string.
pub const TOKEN_VERSION: &str = "LR1";
/// The prefix of every token id.
pub const TOKEN_ID_PREFIX: &str = "njt_";
const ID_HEX_LEN: usize = 16;
const SECRET_BYTES: usize = 32;
/// Length of a 32-byte secret in unpadded base64.
const SECRET_B64_LEN: usize = 43;
const FINGERPRINT_HEX_LEN: usize = 64;

/// The public id of a join token (`njt_` + 16 lowercase hex digits). Safe to log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JoinTokenId(String);

impl JoinTokenId {
    /// A fresh random id.
    pub fn generate() -> Self {
        let mut bytes = [0u8; ID_HEX_LEN / 2];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self::from_random(&bytes)
    }

    /// The id of `bytes`, which must come from the operating system's random source.
    fn from_random(bytes: &[u8]) -> Self {
        debug_assert_eq!(bytes.len(), ID_HEX_LEN / 2);
        JoinTokenId(format!("{TOKEN_ID_PREFIX}{}", hex::encode(bytes)))
    }

    /// Validates an id given in the field `token_id`.
    pub fn parse(value: &str) -> Result<Self, FieldError> {
        Self::parse_as(value, "token_id")
    }

    /// Validates an id given in the field `field`. The error never echoes the value.
    pub fn parse_as(value: &str, field: &'static str) -> Result<Self, FieldError> {
        let valid = value.strip_prefix(TOKEN_ID_PREFIX).is_some_and(|hex| {
            hex.len() == ID_HEX_LEN
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(JoinTokenId(value.to_owned()))
        } else {
            Err(FieldError::new(
                field,
                "is not a join token id (njt_ followed by 16 hex digits)",
            ))
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JoinTokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A freshly minted token: the full string (secret, shown to the operator once) and the
/// hash the store keeps.
pub struct MintedJoinToken {
    /// The public id.
    pub id: JoinTokenId,
    /// SHA-256 of the secret's bytes: the only thing persisted.
    pub secret_sha256: [u8; 32],
    /// `LR1.<fingerprint>.<id>.<secret>`.
    pub token: SecretString,
}

impl MintedJoinToken {
    /// Mints a token for the CA with pin `ca_fingerprint` (lowercase hex SHA-256).
    pub fn mint(ca_fingerprint: &str) -> Self {
        // The secret and the id from one read of the operating system's random source: one
        // system call per token, not two.
        let mut random = Zeroizing::new([0u8; SECRET_BYTES + ID_HEX_LEN / 2]);
        rand::rngs::OsRng.fill_bytes(random.as_mut_slice());
        let (secret, id_bytes) = random.split_at(SECRET_BYTES);
        let id = JoinTokenId::from_random(id_bytes);
        let encoded = Zeroizing::new(URL_SAFE_NO_PAD.encode(secret));
        let token = format!("{TOKEN_VERSION}.{ca_fingerprint}.{id}.{}", encoded.as_str());
        MintedJoinToken {
            secret_sha256: hash_secret(secret),
            id,
            token: token.into(),
        }
    }
}

impl fmt::Debug for MintedJoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MintedJoinToken")
            .field("id", &self.id)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl fmt::Display for MintedJoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "join token {} (secret redacted)", self.id)
    }
}

/// A token string taken apart. The secret stays in a `SecretString`.
pub struct ParsedJoinToken {
    /// The CA pin the token carries (lowercase hex).
    pub fingerprint: String,
    /// The public id.
    pub id: JoinTokenId,
    /// The secret part, base64url.
    pub secret: SecretString,
    secret_sha256: [u8; 32],
}

impl ParsedJoinToken {
    /// Parses `LR1.<64 hex>.<njt_…>.<43 base64url>` (surrounding whitespace, such as the
    /// newline of a token file, is ignored). The error names the field `join_token` and
    /// never contains any part of the input.
    pub fn parse(token: &str) -> Result<Self, FieldError> {
        let malformed = || {
            FieldError::new(
                "join_token",
                "is not a Levelrail join token (expected LR1.<ca fingerprint>.<token id>.<secret>)",
            )
        };
        let mut parts = token.trim().split('.');
        let (Some(version), Some(fingerprint), Some(id), Some(secret), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(malformed());
        };
        let fingerprint_ok = fingerprint.len() == FINGERPRINT_HEX_LEN
            && fingerprint.bytes().all(|b| b.is_ascii_hexdigit());
        if version != TOKEN_VERSION || !fingerprint_ok || secret.len() != SECRET_B64_LEN {
            return Err(malformed());
        }
        let id = JoinTokenId::parse_as(id, "join_token").map_err(|_| malformed())?;
        let bytes = Zeroizing::new(URL_SAFE_NO_PAD.decode(secret).map_err(|_| malformed())?);
        if bytes.len() != SECRET_BYTES {
            return Err(malformed());
        }
        Ok(ParsedJoinToken {
            fingerprint: fingerprint.to_ascii_lowercase(),
            id,
            secret: secret.into(),
            secret_sha256: hash_secret(&bytes),
        })
    }

    /// SHA-256 of the secret's bytes, to compare with the stored hash.
    pub fn secret_sha256(&self) -> &[u8; 32] {
        &self.secret_sha256
    }

    /// Whether the token's CA pin is `ca_fingerprint` (compared in constant time).
    pub fn pins(&self, ca_fingerprint: &str) -> bool {
        constant_time_eq(&self.fingerprint, &ca_fingerprint.to_ascii_lowercase())
    }

    /// The secret part (for an agent that must send it back).
    pub fn expose_secret(&self) -> &str {
        self.secret.expose_secret()
    }
}

impl fmt::Debug for ParsedJoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedJoinToken")
            .field("fingerprint", &self.fingerprint)
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl fmt::Display for ParsedJoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "join token {} (secret redacted)", self.id)
    }
}

/// SHA-256 of a secret's bytes.
fn hash_secret(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Whether a presented secret hash equals the stored one, in constant time.
pub fn secret_hash_matches(stored: &[u8; 32], presented: &[u8; 32]) -> bool {
    bool::from(stored.ct_eq(presented))
}

/// Whether two strings are equal, in constant time (for their common length).
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests;
