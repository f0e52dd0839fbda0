//! Operator API tokens: `lrt_<id>.<secret>`, stored only as a SHA-256 of the secret, checked
//! in constant time. The verifier keeps the hashes in memory so the gRPC interceptor can
//! authenticate synchronously.
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use rand::RngCore as _;
use secrecy::{ExposeSecret as _, SecretString};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use time::OffsetDateTime;

use crate::model::FieldError;
use crate::model::ports::{ApiTokenRecord, CredentialStore, StoreError};

const PREFIX: &str = "lrt_";

/// A freshly minted token: the full string is shown once, the record is stored.
pub struct MintedToken {
    /// `lrt_<id>.<secret>`.
    pub token: SecretString,
    /// What is stored.
    pub record: ApiTokenRecord,
}

impl std::fmt::Debug for MintedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedToken")
            .field("id", &self.record.id)
            .finish_non_exhaustive()
    }
}

/// Mints a new API token with 256 bits of secret.
pub fn mint(label: &str) -> MintedToken {
    let mut id = [0u8; 8];
    let mut secret = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut id);
    rand::thread_rng().fill_bytes(&mut secret);
    let id = hex::encode(id);
    let secret_b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    let record = ApiTokenRecord {
        id: format!("{PREFIX}{id}"),
        secret_sha256: Sha256::digest(secret_b64.as_bytes()).into(),
        label: label.to_owned(),
        created_at: OffsetDateTime::now_utc(),
        revoked_at: None,
    };
    MintedToken {
        token: SecretString::from(format!("{PREFIX}{id}.{secret_b64}")),
        record,
    }
}

/// The longest label.
const LABEL_MAX: usize = 64;

/// `label` if it is 1–64 printable characters.
pub(crate) fn check_label(label: &str) -> Result<&str, FieldError> {
    let bad = |message: &str| FieldError {
        field: "label".into(),
        message: message.into(),
    };
    let trimmed = label.trim();
    if trimmed.is_empty() {
        return Err(bad("is required: what the token is for, e.g. `ci`"));
    }
    if trimmed.chars().count() > LABEL_MAX {
        return Err(bad("must be at most 64 characters"));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(bad("must not contain control characters"));
    }
    Ok(trimmed)
}

/// `id` if it has the shape of a token id (`lrt_` and 16 hex digits).
pub(crate) fn check_id(id: &str) -> Result<&str, FieldError> {
    let hex = id.strip_prefix(PREFIX).unwrap_or_default();
    if hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(id);
    }
    Err(FieldError {
        field: "id".into(),
        message: "must be a token id: `lrt_` and 16 hex digits (the part before the dot)".into(),
    })
}

/// Splits a presented token into (id, SHA-256 of its secret) without judging it.
fn split(token: &str) -> Option<(&str, [u8; 32])> {
    let (id, secret) = token.split_once('.')?;
    if !id.starts_with(PREFIX) || id.len() != PREFIX.len() + 16 || secret.is_empty() {
        return None;
    }
    Some((id, Sha256::digest(secret.as_bytes()).into()))
}

/// In-memory view of the stored token hashes, for synchronous checks.
#[derive(Debug, Clone)]
pub struct ApiTokenVerifier {
    hashes: Arc<RwLock<HashMap<String, [u8; 32]>>>,
    /// False until a process that learns the tokens from elsewhere first has them.
    synced: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for ApiTokenVerifier {
    /// A view this process fills itself (from its own store): ready at once.
    fn default() -> Self {
        Self {
            hashes: Arc::default(),
            synced: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        }
    }
}

impl ApiTokenVerifier {
    /// A view filled by [`Self::replace_all`] from elsewhere (a provisioner replica, from
    /// the credentials service's change stream): until the first set arrives, calls are
    /// answered UNAVAILABLE, not UNAUTHENTICATED.
    pub fn awaiting_sync() -> Self {
        let v = Self::default();
        v.synced.store(false, std::sync::atomic::Ordering::Release);
        v
    }

    /// Whether the view holds the tokens (see [`Self::awaiting_sync`]).
    pub fn is_synced(&self) -> bool {
        self.synced.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Adds a stored record to the in-memory view.
    pub fn insert(&self, record: &ApiTokenRecord) {
        if let Ok(mut map) = self.hashes.write() {
            map.insert(record.id.clone(), record.secret_sha256);
        }
    }

    /// Replaces the whole view with `digests` (id, SHA-256 of the secret): a process that
    /// learns the tokens from the credentials service, where a token missing from the new
    /// set (revoked) is refused from now on.
    pub fn replace_all(&self, digests: impl IntoIterator<Item = (String, [u8; 32])>) {
        let fresh: HashMap<String, [u8; 32]> = digests.into_iter().collect();
        if let Ok(mut map) = self.hashes.write() {
            *map = fresh;
        }
        self.synced
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Drops token `id` from the view (it was revoked).
    pub fn remove(&self, id: &str) {
        if let Ok(mut map) = self.hashes.write() {
            map.remove(id);
        }
    }

    /// Loads the token with id `id` from the store into the view.
    pub async fn load(&self, store: &dyn CredentialStore, id: &str) -> Result<bool, StoreError> {
        match store.get_api_token(id).await? {
            Some(rec) => {
                self.insert(&rec);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Returns the token id when `presented` is a valid token. Constant-time on the secret.
    pub fn verify(&self, presented: &SecretString) -> Option<String> {
        let (id, digest) = split(presented.expose_secret())?;
        let map = self.hashes.read().ok()?;
        let stored = map.get(id)?;
        bool::from(stored.ct_eq(&digest)).then(|| id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_verifies_and_a_tampered_one_does_not() {
        let minted = mint("admin");
        let v = ApiTokenVerifier::default();
        v.insert(&minted.record);
        assert_eq!(v.verify(&minted.token), Some(minted.record.id.clone()));
        let mut s = minted.token.expose_secret().to_owned();
        // Replace the last character with a different one (the same one tampers nothing).
        let last = s.pop().expect("a token");
        s.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(v.verify(&SecretString::from(s)), None);
        assert_eq!(v.verify(&SecretString::from("lrt_nonsense")), None);
        assert_eq!(v.verify(&SecretString::from("")), None);
    }

    #[test]
    fn a_token_missing_from_a_replaced_set_is_refused() {
        let (kept, revoked) = (mint("kept"), mint("revoked"));
        let v = ApiTokenVerifier::default();
        v.insert(&kept.record);
        v.insert(&revoked.record);
        v.replace_all([(kept.record.id.clone(), kept.record.secret_sha256)]);
        assert!(v.verify(&kept.token).is_some());
        assert_eq!(v.verify(&revoked.token), None);
    }

    #[test]
    fn the_record_holds_no_secret() {
        let minted = mint("admin");
        let secret = minted
            .token
            .expose_secret()
            .split_once('.')
            .unwrap()
            .1
            .to_owned();
        let dbg = format!("{:?} {:?}", minted, minted.record);
        assert!(!dbg.contains(&secret));
    }
}
