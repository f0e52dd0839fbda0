//! The port the application layer stores through: the records, the trait the store
//! implements in SQL, and its error, which carries no database type. The store never sees
//! plaintext secrets: it holds envelopes (see `crate::crypto`) and non-secret metadata.
use std::fmt::Debug;

use async_trait::async_trait;
use levelrail_types::ApiScope;
use time::OffsetDateTime;

use crate::model::{CredentialIdentity, ProviderId, Verification};

/// One stored credential: at most one per provider.
#[derive(Clone, PartialEq, Eq)]
pub struct CredentialRecord {
    /// Random id of this credential (UUID); part of the envelope's AAD, so a ciphertext
    /// copied to another row does not decrypt. Replacing a credential gives a new id.
    pub id: String,
    /// The provider (unique).
    pub provider: ProviderId,
    /// The sealed envelope (header, wrapped data key, nonce, ciphertext, tag).
    pub envelope: Vec<u8>,
    /// `<key id>` of the key-encryption key that wraps this row's data key, denormalised
    /// from the envelope so rotation can find rows still on an old key.
    pub kek_id: String,
    /// Non-secret identity shown on the card.
    pub identity: CredentialIdentity,
    /// When this credential was saved.
    pub saved_at: OffsetDateTime,
    /// Last verification of this credential, if any.
    pub verification: Option<Verification>,
}

impl Debug for CredentialRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialRecord")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("envelope", &format_args!("<{} bytes>", self.envelope.len()))
            .field("kek_id", &self.kek_id)
            .field("identity", &self.identity)
            .field("saved_at", &self.saved_at)
            .field("verification", &self.verification)
            .finish()
    }
}

/// An API token as stored: only a hash of its secret part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiTokenRecord {
    /// Public id (`lrt_…`), safe to log.
    pub id: String,
    /// SHA-256 of the secret part.
    pub secret_sha256: [u8; 32],
    /// Free-form label (`admin`).
    pub label: String,
    /// When it was created.
    pub created_at: OffsetDateTime,
    /// When it was revoked (`None`: it authenticates until it expires).
    pub revoked_at: Option<OffsetDateTime>,
    /// What it may call.
    pub scope: ApiScope,
    /// When it stops authenticating (`None`: never).
    pub expires_at: Option<OffsetDateTime>,
}

/// What a revocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// The token is revoked (now, or before).
    Revoked,
    /// No token has that id.
    NotFound,
    /// It is the last live admin token that never expires: revoking it would leave no one
    /// able to manage the tokens (once the others expired).
    LastToken,
}

/// Storage failures a caller acts on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be reached or answered with an error.
    #[error("credential store unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Stored data could not be interpreted (corrupt row, unknown provider).
    #[error("credential store holds an unreadable row: {0}")]
    Corrupt(String),
    /// The DSN names no supported database (the DSN is not repeated).
    #[error("unsupported database URL: want memory, sqlite://PATH or postgres://…")]
    UnsupportedUrl,
}

/// The credentials service's storage.
#[async_trait]
pub trait CredentialStore: Send + Sync + Debug {
    /// Inserts the credential of `record.provider`, replacing any existing one atomically.
    async fn put_credential(&self, record: &CredentialRecord) -> Result<(), StoreError>;
    /// The credential of a provider, if stored.
    async fn get_credential(
        &self,
        provider: ProviderId,
    ) -> Result<Option<CredentialRecord>, StoreError>;
    /// Every stored credential, in provider card order.
    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError>;
    /// Deletes a provider's credential; `true` when one existed.
    async fn delete_credential(&self, provider: ProviderId) -> Result<bool, StoreError>;
    /// Records a verification outcome, but only while the credential `credential_id` is
    /// still the provider's current one (a replaced credential must not inherit it).
    /// Returns whether it was recorded.
    async fn record_verification(
        &self,
        provider: ProviderId,
        credential_id: &str,
        verification: &Verification,
    ) -> Result<bool, StoreError>;
    /// Credentials whose data key is wrapped by a key other than `kek_id`.
    async fn list_credentials_not_on_kek(
        &self,
        kek_id: &str,
    ) -> Result<Vec<CredentialRecord>, StoreError>;
    /// Replaces a row's envelope only if it still equals `expected` (compare-and-swap used
    /// by re-wrapping, so a concurrent SetCredential is never overwritten). Returns whether
    /// the swap happened.
    async fn swap_envelope(
        &self,
        credential_id: &str,
        expected: &[u8],
        new_envelope: &[u8],
        new_kek_id: &str,
    ) -> Result<bool, StoreError>;
    /// Stores an API token hash.
    async fn put_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError>;
    /// Looks an API token up by its public id.
    async fn get_api_token(&self, id: &str) -> Result<Option<ApiTokenRecord>, StoreError>;
    /// Every stored API token (hashes only), ordered by id.
    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError>;
    /// Number of API tokens, revoked ones included (0 on a fresh database).
    async fn count_api_tokens(&self) -> Result<u64, StoreError>;
    /// Revokes token `id` at `at` unless it is the last live token. `Revoked` also when it
    /// was revoked already (its first revocation time stays).
    async fn revoke_api_token(
        &self,
        id: &str,
        at: OffsetDateTime,
    ) -> Result<Revocation, StoreError>;
}
