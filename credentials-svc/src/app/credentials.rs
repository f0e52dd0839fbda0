//! The `Credentials` state struct: every operation of the credentials service. The gRPC
//! layer converts requests and calls exactly one method here.
use std::sync::Arc;
use std::time::Instant;

use secrecy::SecretString;
use time::OffsetDateTime;
use tracing::{info, instrument, warn};
use uuid::Uuid;

use crate::app::api_token::{self, ApiTokenVerifier, TokenEntry};
use crate::app::keys::{self, KeyringHandle, RotationReport};
use crate::broker::{AccessGrant, GrantCache, GrantIssuer, GrantSource};
use crate::crypto::{self, AadContext, CryptoError};
use crate::model::ports::{ApiTokenRecord, CredentialRecord, CredentialStore, Revocation};
use crate::model::{
    CredentialIdentity, CredentialInput, CredentialSecret, CredentialsError, FieldError,
    ProviderId, Verification,
};
use crate::verify::Verifier;
use levelrail_types::ApiScope;

/// One provider card: connection state and non-secret metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCard {
    pub provider: ProviderId,
    /// The stored credential's metadata, when connected.
    pub stored: Option<StoredSummary>,
}

/// Non-secret summary of a stored credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSummary {
    /// When it was saved.
    pub saved_at: OffsetDateTime,
    /// Who it acts as.
    pub identity: CredentialIdentity,
    /// Last verification, if any.
    pub verification: Option<Verification>,
}

impl ProviderCard {
    fn from_record(provider: ProviderId, rec: Option<&CredentialRecord>) -> Self {
        Self {
            provider,
            stored: rec.map(|r| StoredSummary {
                saved_at: r.saved_at,
                identity: r.identity.clone(),
                verification: r.verification.clone(),
            }),
        }
    }
}

/// The credentials service.
#[derive(Debug, Clone)]
pub struct Credentials {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn CredentialStore>,
    keys: KeyringHandle,
    verifier: Verifier,
    issuer: Arc<dyn GrantIssuer>,
    grants: GrantCache,
    api_tokens: ApiTokenVerifier,
    /// Bumped after every change a provisioner caches (credentials, API tokens).
    changes: tokio::sync::watch::Sender<u64>,
    /// The credential id of each provider known to have one (learnt from a read, or from
    /// this service's own writes) and when, so a provisioner in this process can key its
    /// catalog with no read. Trusted for [`KNOWN_CREDENTIAL_TTL`] (another process sharing
    /// the database may replace it). Changed only together with `changes`, under this lock.
    current: std::sync::Mutex<std::collections::HashMap<ProviderId, (String, Instant)>>,
}

/// How long a credential id learnt by this process is used without a read.
const KNOWN_CREDENTIAL_TTL: std::time::Duration = std::time::Duration::from_secs(10);

/// Each provider's known credential id, and when it was learnt.
type KnownCredentials = std::collections::HashMap<ProviderId, (String, Instant)>;

fn set_known(known: &mut KnownCredentials, provider: ProviderId, id: Option<&str>) {
    match id {
        Some(id) => known.insert(provider, (id.to_owned(), Instant::now())),
        None => known.remove(&provider),
    };
}

/// What a provisioner caches from this service: which credential each provider has, and
/// the API tokens' digests (never their secrets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerState {
    /// Every stored credential: its provider and row id.
    pub credentials: Vec<(ProviderId, String)>,
    /// Every live API token: its id, the SHA-256 of its secret, its scope and expiry.
    pub api_tokens: Vec<(String, TokenEntry)>,
}

impl Credentials {
    /// Assembles the service.
    pub fn new(
        store: Arc<dyn CredentialStore>,
        keys: KeyringHandle,
        verifier: Verifier,
        issuer: Arc<dyn GrantIssuer>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                keys,
                verifier,
                issuer,
                grants: GrantCache::default(),
                api_tokens: ApiTokenVerifier::default(),
                changes: tokio::sync::watch::Sender::new(0),
                current: std::sync::Mutex::default(),
            }),
        }
    }

    /// The store (for wiring and tests).
    pub fn store(&self) -> &Arc<dyn CredentialStore> {
        &self.inner.store
    }

    /// The in-memory API token verifier used by the listener's interceptor.
    pub fn api_tokens(&self) -> &ApiTokenVerifier {
        &self.inner.api_tokens
    }

    /// Changes after every change to what [`Self::broker_state`] returns.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn changed(&self) {
        self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Records a credential change: `provider` now has credential `id` (`None`: none).
    fn credential_changed(&self, provider: ProviderId, id: Option<&str>) {
        let mut current = self.lock_current();
        self.changed();
        set_known(&mut current, provider, id);
    }

    /// Records what a read found (`id`, or none), unless a change landed since the read
    /// began (`seen`: the change counter then): memory would then be newer than the read.
    fn credential_read(&self, provider: ProviderId, id: Option<&str>, seen: u64) {
        let mut current = self.lock_current();
        if *self.inner.changes.borrow() == seen {
            set_known(&mut current, provider, id);
        }
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, KnownCredentials> {
        self.inner.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id of `provider`'s credential if this service learnt in the last
    /// [`KNOWN_CREDENTIAL_TTL`] that it has one, with no read (`None`: it has none, or this
    /// process does not know; ask [`Self::issue_access`]).
    pub fn known_credential_id(&self, provider: ProviderId) -> Option<String> {
        self.lock_current()
            .get(&provider)
            .filter(|(_, at)| at.elapsed() < KNOWN_CREDENTIAL_TTL)
            .map(|(id, _)| id.clone())
    }

    /// The stored credentials' ids and the API tokens' digests.
    pub async fn broker_state(&self) -> Result<BrokerState, CredentialsError> {
        let credentials = self
            .inner
            .store
            .list_credentials()
            .await?
            .into_iter()
            .map(|r| (r.provider, r.id))
            .collect();
        let api_tokens = self
            .inner
            .store
            .list_api_tokens()
            .await?
            .into_iter()
            .filter(|t| t.revoked_at.is_none())
            .map(|t| (t.id.clone(), TokenEntry::from(&t)))
            .collect();
        Ok(BrokerState {
            credentials,
            api_tokens,
        })
    }

    /// Validates and stores a credential, replacing the provider's previous one. Nothing is
    /// written when validation fails.
    #[instrument(skip_all, fields(provider = %input.provider()))]
    pub async fn set_credential(
        &self,
        input: CredentialInput,
    ) -> Result<ProviderCard, CredentialsError> {
        let parsed = crate::model::validate::parse(input)?;
        let provider = parsed.secret.provider();
        let id = Uuid::new_v4().to_string();
        let ring = self.inner.keys.current()?;
        let ctx = AadContext {
            credential_id: &id,
            provider: provider.as_str(),
        };
        let envelope = crypto::seal(ring.primary().as_ref(), &ctx, &parsed.secret.to_plaintext())?;
        let record = CredentialRecord {
            kek_id: ring.primary().id().to_owned(),
            id: id.clone(),
            provider,
            envelope,
            identity: parsed.identity,
            saved_at: truncate_to_micros(OffsetDateTime::now_utc()),
            verification: None,
        };
        self.inner.store.put_credential(&record).await?;
        self.inner.grants.invalidate(provider);
        self.credential_changed(provider, Some(&id));
        self.ensure_on_current_key(&record, &ring).await?;
        info!(credential_id = %id, kek_id = %record.kek_id, "credential stored");
        Ok(ProviderCard::from_record(provider, Some(&record)))
    }

    /// A rotation may have retired the key this row was sealed with between our keyring
    /// read and the write; re-wrap at once with the keys still in memory.
    async fn ensure_on_current_key(
        &self,
        record: &CredentialRecord,
        sealed_with: &crypto::Keyring,
    ) -> Result<(), CredentialsError> {
        let now = self.inner.keys.current()?;
        if now.get(&record.kek_id).is_some() && now.primary().id() == record.kek_id {
            return Ok(());
        }
        let merged = merge_keyrings(&now, sealed_with, &record.kek_id)?;
        let ctx = AadContext {
            credential_id: &record.id,
            provider: record.provider.as_str(),
        };
        let rewrapped = crypto::rewrap(&merged, &ctx, &record.envelope)?;
        self.inner
            .store
            .swap_envelope(
                &record.id,
                &record.envelope,
                &rewrapped,
                merged.primary().id(),
            )
            .await?;
        Ok(())
    }

    /// Deletes a provider's credential. Returns whether one existed, and the card after.
    #[instrument(skip(self))]
    pub async fn delete_credential(
        &self,
        provider: ProviderId,
    ) -> Result<(bool, ProviderCard), CredentialsError> {
        let deleted = self.inner.store.delete_credential(provider).await?;
        self.inner.grants.invalidate(provider);
        if deleted {
            self.credential_changed(provider, None);
            info!("credential deleted");
        }
        Ok((deleted, ProviderCard::from_record(provider, None)))
    }

    /// All five cards, in fixed order.
    pub async fn list_providers(&self) -> Result<Vec<ProviderCard>, CredentialsError> {
        let records = self.inner.store.list_credentials().await?;
        Ok(ProviderId::ALL
            .into_iter()
            .map(|p| ProviderCard::from_record(p, records.iter().find(|r| r.provider == p)))
            .collect())
    }

    /// Runs the provider's capability probe with the stored credential and records it.
    #[instrument(skip(self))]
    pub async fn verify_credential(
        &self,
        provider: ProviderId,
    ) -> Result<(Verification, ProviderCard), CredentialsError> {
        let (record, secret) = self.load_secret(provider).await?;
        let outcome = self.inner.verifier.verify(&secret).await?;
        let verification = Verification {
            ok: outcome.ok,
            checked_at: truncate_to_micros(OffsetDateTime::now_utc()),
            message: outcome.message,
            provider_code: outcome.provider_code,
            account: outcome.account,
            permissions: outcome.permissions,
        };
        self.inner
            .store
            .record_verification(provider, &record.id, &verification)
            .await?;
        info!(ok = verification.ok, code = %verification.provider_code, "credential verified");
        let mut after = record;
        after.verification = Some(verification.clone());
        Ok((
            verification,
            ProviderCard::from_record(provider, Some(&after)),
        ))
    }

    /// Issues a short-lived access grant for the provisioner (cached until shortly before
    /// it expires).
    #[instrument(skip(self))]
    pub async fn issue_access(
        &self,
        provider: ProviderId,
        purpose: &str,
    ) -> Result<AccessGrant, CredentialsError> {
        self.issue(provider, purpose, true).await
    }

    /// Issues a new grant, never the cached one: the provider refused the cached grant
    /// (revoked early, a clock skew), so reusing it would fail again.
    #[instrument(skip(self))]
    pub async fn issue_fresh_access(
        &self,
        provider: ProviderId,
        purpose: &str,
    ) -> Result<AccessGrant, CredentialsError> {
        self.issue(provider, purpose, false).await
    }

    async fn issue(
        &self,
        provider: ProviderId,
        purpose: &str,
        reuse: bool,
    ) -> Result<AccessGrant, CredentialsError> {
        let seen = *self.inner.changes.borrow();
        let found = self.inner.store.get_credential(provider).await?;
        self.credential_read(provider, found.as_ref().map(|r| r.id.as_str()), seen);
        let record = found.ok_or(CredentialsError::NotConnected(provider))?;
        // A grant cached for this very row needs no decryption.
        let source = GrantSource::new(&record.id, &record.envelope);
        if let Some(grant) = reuse
            .then(|| self.inner.grants.get(provider, &source))
            .flatten()
        {
            return Ok(grant);
        }
        let secret = self.decrypt(&record)?;
        let grant = self.inner.issuer.issue(&record.id, &secret).await?;
        self.inner.grants.put(provider, source, grant.clone());
        info!(credential_id = %record.id, %purpose, "access grant issued");
        Ok(grant)
    }

    async fn load_secret(
        &self,
        provider: ProviderId,
    ) -> Result<(CredentialRecord, CredentialSecret), CredentialsError> {
        let record = self
            .inner
            .store
            .get_credential(provider)
            .await?
            .ok_or(CredentialsError::NotConnected(provider))?;
        let secret = self.decrypt(&record)?;
        Ok((record, secret))
    }

    /// Opens a stored record (reloading the keyring once when its key is unknown: another
    /// process may have rotated it since our last look).
    fn decrypt(&self, record: &CredentialRecord) -> Result<CredentialSecret, CredentialsError> {
        let ctx = AadContext {
            credential_id: &record.id,
            provider: record.provider.as_str(),
        };
        let ring = self.inner.keys.current()?;
        let plaintext = match crypto::open(&ring, &ctx, &record.envelope) {
            Err(CryptoError::UnknownKey(_)) => {
                let ring = self.inner.keys.reload()?;
                crypto::open(&ring, &ctx, &record.envelope)
            }
            other => other,
        }
        .inspect_err(
            |e| warn!(credential_id = %record.id, error = %e, "credential does not decrypt"),
        )?;
        Ok(CredentialSecret::from_plaintext(
            record.provider,
            &plaintext,
        )?)
    }

    /// Rotates the master key: add, promote, re-wrap every data key, retire the old key.
    pub async fn rotate_master_key(&self) -> Result<RotationReport, CredentialsError> {
        keys::rotate(&self.inner.keys, self.inner.store.as_ref()).await
    }

    /// Opens the data directory's sealed file `name` (see
    /// [`SealedFiles`](crate::app::sealed_files::SealedFiles)); `None` when there is none.
    pub fn read_sealed_file(
        &self,
        name: &str,
    ) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, CredentialsError> {
        let ring = self.inner.keys.current()?;
        Ok(self.inner.keys.sealed_files().read(&ring, name)?)
    }

    /// Seals `plaintext` with the master keyring's primary key as the data directory's
    /// sealed file `name`; master-key rotations re-wrap it.
    pub fn write_sealed_file(&self, name: &str, plaintext: &[u8]) -> Result<(), CredentialsError> {
        let ring = self.inner.keys.current()?;
        Ok(self
            .inner
            .keys
            .sealed_files()
            .write(&ring, name, plaintext)?)
    }

    /// Finishes a rotation interrupted earlier (a no-op when none is pending).
    pub async fn resume_rotation(&self) -> Result<RotationReport, CredentialsError> {
        keys::resume(&self.inner.keys, self.inner.store.as_ref()).await
    }

    /// Loads every stored API token hash into the verifier; on a fresh database mints the
    /// admin token and returns it (the only time its secret exists outside the caller).
    pub async fn bootstrap_api_tokens(&self) -> Result<Option<SecretString>, CredentialsError> {
        if self.inner.store.count_api_tokens().await? == 0 {
            let minted = api_token::mint("admin", ApiScope::Admin, None);
            self.inner.store.put_api_token(&minted.record).await?;
            self.inner.api_tokens.insert(&minted.record);
            self.changed();
            info!(token_id = %minted.record.id, "admin API token created");
            return Ok(Some(minted.token));
        }
        for rec in self.inner.store.list_api_tokens().await? {
            if rec.revoked_at.is_none() {
                self.inner.api_tokens.insert(&rec);
            }
        }
        Ok(None)
    }

    /// Mints an additional API token labelled `label` (for example for a CI system) that
    /// may call what `scope` allows, for `life` from now (`None`: until revoked): the whole
    /// token (shown once) and what is stored.
    pub async fn create_api_token(
        &self,
        label: &str,
        scope: Option<ApiScope>,
        life: Option<time::Duration>,
    ) -> Result<(SecretString, ApiTokenRecord), CredentialsError> {
        let label = api_token::check_label(label)?;
        let scope = scope.ok_or_else(|| FieldError {
            field: "scope".into(),
            message: "is required: read, provision, credentials-admin or admin".into(),
        })?;
        let expires_at = api_token::expiry(OffsetDateTime::now_utc(), life)?;
        let minted = api_token::mint(label, scope, expires_at);
        self.inner.store.put_api_token(&minted.record).await?;
        self.inner.api_tokens.insert(&minted.record);
        self.changed();
        info!(token_id = %minted.record.id, %scope, expires_at = ?minted.record.expires_at, "API token created");
        Ok((minted.token, minted.record))
    }

    /// Every API token, revoked ones included, by id.
    pub async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, CredentialsError> {
        Ok(self.inner.store.list_api_tokens().await?)
    }

    /// Revokes API token `id`: this process refuses it at once, every provisioner as soon
    /// as the change stream tells it. The last live token is never revoked.
    pub async fn revoke_api_token(&self, id: &str) -> Result<ApiTokenRecord, CredentialsError> {
        let id = api_token::check_id(id)?;
        let now = truncate_to_micros(OffsetDateTime::now_utc());
        match self.inner.store.revoke_api_token(id, now).await? {
            Revocation::Revoked => {}
            Revocation::NotFound => {
                return Err(CredentialsError::NotFound(format!("no API token {id}")));
            }
            Revocation::LastToken => {
                return Err(CredentialsError::FailedPrecondition(format!(
                    "{id} is the last live admin token that never expires: create another \
                     admin token that never expires before revoking it"
                )));
            }
        }
        self.inner.api_tokens.remove(id);
        self.changed();
        info!(token_id = %id, "API token revoked");
        self.inner
            .store
            .get_api_token(id)
            .await?
            .ok_or_else(|| CredentialsError::NotFound(format!("no API token {id}")))
    }
}

/// `now` plus the key `kek_id` from `older` (as retiring), so a row sealed with a key that
/// a concurrent rotation has just retired can still be re-wrapped.
fn merge_keyrings(
    now: &crypto::Keyring,
    older: &crypto::Keyring,
    kek_id: &str,
) -> Result<crypto::Keyring, CryptoError> {
    let mut keys = Vec::new();
    for id in now.key_ids() {
        if let (Some(k), Some(state)) = (now.get(&id), now.state_of(&id)) {
            keys.push((k.clone(), state));
        }
    }
    if now.get(kek_id).is_none() {
        let old = older
            .get(kek_id)
            .ok_or_else(|| CryptoError::UnknownKey(kek_id.to_owned()))?;
        keys.push((old.clone(), crypto::KeyState::Retiring));
    }
    crypto::Keyring::new(keys)
}

/// Storage keeps microseconds; truncate so what we return equals what a reload returns.
fn truncate_to_micros(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1_000 * 1_000)
        .unwrap_or(t)
}
