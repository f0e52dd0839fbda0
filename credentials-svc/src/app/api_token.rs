//! Operator API tokens: `lrt_<id>.<secret>`, stored only as a SHA-256 of the secret, checked
//! in constant time, each with a scope and an optional expiry. The verifier keeps the
//! hashes in memory so the gRPC interceptor can authenticate synchronously.
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use rand::RngCore as _;
use secrecy::{ExposeSecret as _, SecretString};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use time::OffsetDateTime;

use levelrail_types::ApiScope;

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

/// Mints a new API token with 256 bits of secret, of `scope`, authenticating until
/// `expires_at` (`None`: until revoked).
pub fn mint(label: &str, scope: ApiScope, expires_at: Option<OffsetDateTime>) -> MintedToken {
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
        scope,
        expires_at,
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

/// The shortest life a token may be given.
const SHORTEST_LIFE: time::Duration = time::Duration::minutes(1);
/// The longest life a token may be given (beyond it, make one that never expires).
const LONGEST_LIFE: time::Duration = time::Duration::days(3653);

/// When a token given `life` from `now` expires: `None` (never) without a life; an error
/// naming `expires_in` outside a minute to ten years.
pub(crate) fn expiry(
    now: OffsetDateTime,
    life: Option<time::Duration>,
) -> Result<Option<OffsetDateTime>, FieldError> {
    let Some(life) = life else {
        return Ok(None);
    };
    if life < SHORTEST_LIFE || life > LONGEST_LIFE {
        return Err(FieldError {
            field: "expires_in".into(),
            message: "must be at least a minute and at most ten years (leave it unset for a \
                      token that never expires)"
                .into(),
        });
    }
    Ok(Some(now + life))
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

/// What the verifier knows of a live token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEntry {
    /// SHA-256 of the secret part.
    pub secret_sha256: [u8; 32],
    /// What it may call.
    pub scope: ApiScope,
    /// When it stops authenticating (`None`: never).
    pub expires_at: Option<OffsetDateTime>,
}

impl From<&ApiTokenRecord> for TokenEntry {
    fn from(record: &ApiTokenRecord) -> Self {
        TokenEntry {
            secret_sha256: record.secret_sha256,
            scope: record.scope,
            expires_at: record.expires_at,
        }
    }
}

/// A presented token that authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Its id (`lrt_…`), safe to log.
    pub token_id: String,
    /// What it may call.
    pub scope: ApiScope,
}

/// Why a presented token does not authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Malformed, unknown, revoked or a wrong secret: nothing more is said.
    Invalid,
    /// A genuine token past its expiry (only its holder, who has the secret, learns this).
    Expired,
}

/// In-memory view of the stored token hashes, for synchronous checks.
#[derive(Debug, Clone)]
pub struct ApiTokenVerifier {
    hashes: Arc<RwLock<HashMap<String, TokenEntry>>>,
    /// False until a process that learns the tokens from elsewhere first has them.
    synced: Arc<std::sync::atomic::AtomicBool>,
    /// Bumped whenever a token leaves the view (revoked), so open streams can end.
    removed: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for ApiTokenVerifier {
    /// A view this process fills itself (from its own store): ready at once.
    fn default() -> Self {
        Self {
            hashes: Arc::default(),
            synced: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            removed: Arc::new(tokio::sync::watch::Sender::new(0)),
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
            map.insert(record.id.clone(), TokenEntry::from(record));
        }
    }

    /// Replaces the whole view with `tokens` (by id): a process that learns the tokens
    /// from the credentials service, where a token missing from the new set (revoked) is
    /// refused from now on.
    pub fn replace_all(&self, tokens: impl IntoIterator<Item = (String, TokenEntry)>) {
        let fresh: HashMap<String, TokenEntry> = tokens.into_iter().collect();
        if let Ok(mut map) = self.hashes.write() {
            let gone = map.keys().any(|id| !fresh.contains_key(id));
            *map = fresh;
            if gone {
                self.removed.send_modify(|n| *n += 1);
            }
        }
        self.synced
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Drops token `id` from the view (it was revoked).
    pub fn remove(&self, id: &str) {
        if let Ok(mut map) = self.hashes.write() {
            map.remove(id);
        }
        self.removed.send_modify(|n| *n += 1);
    }

    /// Whether token `id` authenticates now (in the view and not expired), and when it
    /// stops (`None`: never, unless revoked).
    pub fn live_until(&self, id: &str) -> Option<Option<OffsetDateTime>> {
        let map = self.hashes.read().ok()?;
        let entry = map.get(id)?;
        match entry.expires_at {
            Some(at) if at <= OffsetDateTime::now_utc() => None,
            until => Some(until),
        }
    }

    /// Changes whenever a token leaves the view.
    pub fn removals(&self) -> tokio::sync::watch::Receiver<u64> {
        self.removed.subscribe()
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

    /// The token `presented` is, when it authenticates now. Constant-time on the secret;
    /// the expiry is only looked at once the secret matched.
    pub fn verify(&self, presented: &SecretString) -> Result<Verified, Refused> {
        self.verify_at(presented, OffsetDateTime::now_utc())
    }

    fn verify_at(
        &self,
        presented: &SecretString,
        now: OffsetDateTime,
    ) -> Result<Verified, Refused> {
        let (id, digest) = split(presented.expose_secret()).ok_or(Refused::Invalid)?;
        let map = self.hashes.read().map_err(|_| Refused::Invalid)?;
        let stored = map.get(id).ok_or(Refused::Invalid)?;
        if !bool::from(stored.secret_sha256.ct_eq(&digest)) {
            return Err(Refused::Invalid);
        }
        if stored.expires_at.is_some_and(|at| at <= now) {
            return Err(Refused::Expired);
        }
        Ok(Verified {
            token_id: id.to_owned(),
            scope: stored.scope,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_verifies_and_a_tampered_one_does_not() {
        let minted = mint("admin", ApiScope::Admin, None);
        let v = ApiTokenVerifier::default();
        v.insert(&minted.record);
        assert_eq!(
            v.verify(&minted.token),
            Ok(Verified {
                token_id: minted.record.id.clone(),
                scope: ApiScope::Admin
            })
        );
        let mut s = minted.token.expose_secret().to_owned();
        // Replace the last character with a different one (the same one tampers nothing).
        let last = s.pop().expect("a token");
        s.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(v.verify(&SecretString::from(s)), Err(Refused::Invalid));
        assert_eq!(
            v.verify(&SecretString::from("lrt_nonsense")),
            Err(Refused::Invalid)
        );
        assert_eq!(v.verify(&SecretString::from("")), Err(Refused::Invalid));
    }

    #[test]
    fn a_token_authenticates_until_its_expiry_and_then_says_so_only_to_its_holder() {
        let expires = OffsetDateTime::now_utc() + time::Duration::hours(1);
        let minted = mint("ci", ApiScope::Read, Some(expires));
        let v = ApiTokenVerifier::default();
        v.insert(&minted.record);
        let before = v.verify_at(&minted.token, expires - time::Duration::seconds(1));
        assert_eq!(before.map(|t| t.scope), Ok(ApiScope::Read));
        assert_eq!(v.verify_at(&minted.token, expires), Err(Refused::Expired));
        // A wrong secret for that id learns nothing about the expiry.
        let forged = format!("{}.{}", minted.record.id, "A".repeat(43));
        assert_eq!(
            v.verify_at(&SecretString::from(forged), expires),
            Err(Refused::Invalid)
        );
    }

    #[test]
    fn a_token_missing_from_a_replaced_set_is_refused() {
        let (kept, revoked) = (
            mint("kept", ApiScope::Provision, None),
            mint("revoked", ApiScope::Admin, None),
        );
        let v = ApiTokenVerifier::default();
        v.insert(&kept.record);
        v.insert(&revoked.record);
        v.replace_all([(kept.record.id.clone(), TokenEntry::from(&kept.record))]);
        assert_eq!(
            v.verify(&kept.token).map(|t| t.scope),
            Ok(ApiScope::Provision)
        );
        assert_eq!(v.verify(&revoked.token), Err(Refused::Invalid));
    }

    #[test]
    fn the_record_holds_no_secret() {
        let minted = mint("admin", ApiScope::Admin, None);
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
