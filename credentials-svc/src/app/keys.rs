//! Where the master keyring comes from, kept current while the service runs, and the
//! resumable master-key rotation (add → promote → re-wrap every data key → retire).
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tracing::{info, warn};

use crate::crypto::{self, AadContext, CryptoError, Keyring, KeyringFile};
use crate::model::CredentialsError;
use crate::model::ports::CredentialStore;

/// The source of the key-encryption keys.
#[derive(Debug)]
pub enum MasterKeySource {
    /// A keyring file in the data directory (created 0600 on first start); rotatable.
    File(PathBuf),
    /// A single key from the environment (`LEVELRAIL_MASTER_KEY`); rotate it in the
    /// secret manager that provides it.
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
}

impl KeyringHandle {
    /// Opens the source, creating the keyring file on first start. Returns the handle and
    /// whether a new keyring was created.
    pub fn open(source: MasterKeySource) -> Result<(Self, bool), CryptoError> {
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
            "the master key comes from LEVELRAIL_MASTER_KEY; rotate it where it is stored".into(),
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
        return Ok(RotationReport {
            primary: keys.current()?.primary().id().to_owned(),
            ..Default::default()
        });
    };
    let mut ring = keys.reload()?;
    if let Some(id) = ring.active_ids().into_iter().next() {
        file.promote(&id)?;
        info!(key_id = %id, "master key promoted");
        ring = keys.reload()?;
    }
    let primary = ring.primary().id().to_owned();
    let mut report = RotationReport {
        primary: primary.clone(),
        ..Default::default()
    };
    // Loop until a scan finds nothing: a credential saved concurrently with an older
    // keyring is caught by the next pass.
    loop {
        let stale = store.list_credentials_not_on_kek(&primary).await?;
        if stale.is_empty() {
            break;
        }
        for rec in stale {
            let ctx = AadContext {
                credential_id: &rec.id,
                provider: rec.provider.as_str(),
            };
            let rewrapped = crypto::rewrap(&ring, &ctx, &rec.envelope)?;
            if store
                .swap_envelope(&rec.id, &rec.envelope, &rewrapped, &primary)
                .await?
            {
                report.rewrapped += 1;
            } else {
                warn!(credential_id = %rec.id, "credential changed during re-wrap; rescanning");
            }
        }
    }
    for id in ring.retiring_ids() {
        file.retire(&id)?;
        info!(key_id = %id, "master key retired");
        report.retired.push(id);
    }
    keys.reload()?;
    Ok(report)
}
