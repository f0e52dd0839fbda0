//! Where the master keyring comes from, kept current while the service runs, and the
//! resumable master-key rotation (add → promote → re-wrap every data key → retire).
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tracing::{info, warn};

use super::sealed_files::SealedFiles;
use crate::crypto::{self, AadContext, CryptoError, Keyring, KeyringFile};
use crate::model::CredentialsError;
use crate::model::ports::CredentialStore;

/// The source of the key-encryption keys.
#[derive(Debug)]
pub enum MasterKeySource {
    /// A keyring file in the data directory (created 0600 on first start); rotatable.
    File(PathBuf),
    /// Keys from the environment (`LEVELRAIL_MASTER_KEY`, and while a rotation rolls out
    /// `LEVELRAIL_MASTER_KEY_PREVIOUS`): rotated by starting with both, which re-wraps
    /// every data key (see [`resume`]).
    Env(Arc<Keyring>),
}

/// The keyring file's (modified time, length) when last read, and the keyring read.
type Cached = (Option<(SystemTime, u64)>, Arc<Keyring>);

/// The current keyring, reloaded when the keyring file changes (another process, such as
/// `levelrail-credentials rotate-master-key`, may rotate it while the service runs).
#[derive(Debug)]
pub struct KeyringHandle {
    source: MasterKeySource,
    cached: Mutex<Cached>,
    /// The data directory's sealed files, re-wrapped with the credentials.
    files: SealedFiles,
}

impl KeyringHandle {
    /// Opens the source, creating the keyring file on first start; `files` are the sealed
    /// files of the data directory. Returns the handle and whether a new keyring was
    /// created.
    pub fn open(source: MasterKeySource, files: SealedFiles) -> Result<(Self, bool), CryptoError> {
        let (stamp, ring, created) = match &source {
            MasterKeySource::File(path) => {
                let (ring, created) = KeyringFile::new(path.clone()).load_or_create()?;
                (file_stamp(path), Arc::new(ring), created)
            }
            MasterKeySource::Env(ring) => (None, ring.clone(), false),
        };
        Ok((
            Self {
                source,
                cached: Mutex::new((stamp, ring)),
                files,
            },
            created,
        ))
    }

    /// The keyring as of now (reloaded when the file changed since the last call).
    pub fn current(&self) -> Result<Arc<Keyring>, CryptoError> {
        let MasterKeySource::File(path) = &self.source else {
            return Ok(self.lock().1.clone());
        };
        let stamp = file_stamp(path);
        {
            let cached = self.lock();
            if stamp.is_some() && cached.0 == stamp {
                return Ok(cached.1.clone());
            }
        }
        self.reload()
    }

    /// Forces a reload from the file.
    pub fn reload(&self) -> Result<Arc<Keyring>, CryptoError> {
        let MasterKeySource::File(path) = &self.source else {
            return Ok(self.lock().1.clone());
        };
        let stamp = file_stamp(path);
        let ring = Arc::new(KeyringFile::new(path.clone()).load()?);
        *self.lock() = (stamp, ring.clone());
        Ok(ring)
    }

    /// The data directory's sealed files.
    pub fn sealed_files(&self) -> &SealedFiles {
        &self.files
    }

    /// The keyring file, when the keys come from one.
    pub fn file(&self) -> Option<KeyringFile> {
        match &self.source {
            MasterKeySource::File(p) => Some(KeyringFile::new(p.clone())),
            MasterKeySource::Env(_) => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        // A poisoned lock only means another thread panicked mid-update of a cache entry
        // that is replaced wholesale; the data is still consistent.
        self.cached.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn file_stamp(path: &PathBuf) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// What a rotation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RotationReport {
    /// The key that is primary now.
    pub primary: String,
    /// Data keys re-wrapped by this run.
    pub rewrapped: usize,
    /// Keys removed from the keyring.
    pub retired: Vec<String>,
}

/// Starts a rotation (unless one is already half done, which is resumed instead) and runs
/// it to completion.
pub async fn rotate(
    keys: &KeyringHandle,
    store: &dyn CredentialStore,
) -> Result<RotationReport, CredentialsError> {
    let file = keys.file().ok_or_else(|| {
        CredentialsError::FailedPrecondition(
            "the master key comes from LEVELRAIL_MASTER_KEY: to rotate it, start the service \
             with the new key in LEVELRAIL_MASTER_KEY and the old one in \
             LEVELRAIL_MASTER_KEY_PREVIOUS"
                .into(),
        )
    })?;
    let ring = keys.reload()?;
    if !ring.has_pending_rotation() {
        let new_id = file.add_key()?;
        info!(key_id = %new_id, "master key added");
    }
    resume(keys, store).await
}

/// Finishes a rotation left half done (a key added but not promoted, or data keys still
/// wrapped by a retiring key). A no-op when there is none. Every step is idempotent, so an
/// interruption at any point is finished by the next call.
pub async fn resume(
    keys: &KeyringHandle,
    store: &dyn CredentialStore,
) -> Result<RotationReport, CredentialsError> {
    let Some(file) = keys.file() else {
        return rewrap_env(keys, store).await;
    };
    let mut ring = keys.reload()?;
    if let Some(id) = ring.active_ids().into_iter().next() {
        file.promote(&id)?;
        info!(key_id = %id, "master key promoted");
        ring = keys.reload()?;
    }
    let mut report = RotationReport {
        primary: ring.primary().id().to_owned(),
        rewrapped: rewrap_all(&ring, store).await? + keys.files.rewrap_all(&ring)?,
        ..Default::default()
    };
    for id in ring.retiring_ids() {
        file.retire(&id)?;
        info!(key_id = %id, "master key retired");
        report.retired.push(id);
    }
    keys.reload()?;
    Ok(report)
}

/// Keys from the environment: every data key still wrapped by the previous key
/// (`LEVELRAIL_MASTER_KEY_PREVIOUS`), or under the id of an earlier release, is re-wrapped
/// by the current one. A credential neither key opens stops the start, saying which
/// variable to set, instead of failing later at each use.
async fn rewrap_env(
    keys: &KeyringHandle,
    store: &dyn CredentialStore,
) -> Result<RotationReport, CredentialsError> {
    let ring = keys.current()?;
    let rewrapped = rewrap_all(&ring, store)
        .await
        .and_then(|stored| Ok(stored + keys.files.rewrap_all(&ring)?));
    let rewrapped = rewrapped.map_err(|e| match e {
        CredentialsError::Crypto(CryptoError::Decrypt | CryptoError::UnknownKey(_)) => {
            CredentialsError::FailedPrecondition(
                "a stored credential or sealed file (such as the node CA's key) is sealed with \
                 a master key that is neither \
                 LEVELRAIL_MASTER_KEY nor LEVELRAIL_MASTER_KEY_PREVIOUS: to rotate the key, \
                 start with the new key in LEVELRAIL_MASTER_KEY and the key it replaces in \
                 LEVELRAIL_MASTER_KEY_PREVIOUS"
                    .into(),
            )
        }
        other => other,
    })?;
    let retired = ring.retiring_ids();
    if !retired.is_empty() {
        info!(
            rewrapped,
            "every credential is sealed with the new master key: \
             LEVELRAIL_MASTER_KEY_PREVIOUS can be removed"
        );
    }
    Ok(RotationReport {
        primary: ring.primary().id().to_owned(),
        rewrapped,
        retired,
    })
}

/// Re-wraps every data key not wrapped by `ring`'s primary; returns how many. Loops until
/// a scan finds nothing: a credential saved concurrently with an older keyring is caught
/// by the next pass.
async fn rewrap_all(
    ring: &Keyring,
    store: &dyn CredentialStore,
) -> Result<usize, CredentialsError> {
    let primary = ring.primary().id();
    let mut rewrapped = 0;
    loop {
        let stale = store.list_credentials_not_on_kek(primary).await?;
        if stale.is_empty() {
            return Ok(rewrapped);
        }
        for rec in stale {
            let ctx = AadContext {
                credential_id: &rec.id,
                provider: rec.provider.as_str(),
            };
            let envelope = crypto::rewrap(ring, &ctx, &rec.envelope)?;
            if store
                .swap_envelope(&rec.id, &rec.envelope, &envelope, primary)
                .await?
            {
                rewrapped += 1;
            } else {
                warn!(credential_id = %rec.id, "credential changed during re-wrap; rescanning");
            }
        }
    }
}
