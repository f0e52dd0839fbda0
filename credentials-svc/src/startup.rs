//! Opening the credentials service from a data directory: the keyring (file created 0600
//! on first start, or the `LEVELRAIL_MASTER_KEY` environment value), the store (SQLite in
//! the data directory unless a database URL is given), the verifier and the grant issuers.
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use secrecy::{ExposeSecret as _, SecretString};

use crate::app::Credentials;
use crate::app::keys::{KeyringHandle, MasterKeySource};
use crate::app::sealed_files::SealedFiles;
use crate::broker::GrantIssuer;
use crate::crypto::keyring_from_env_keys;
use crate::verify::Verifier;

/// Where the service's state lives.
#[derive(Debug, Clone)]
pub struct StorageConfig<'a> {
    /// The data directory.
    pub data_dir: &'a Path,
    /// `sqlite://…` or `postgres://…`; default SQLite file in the data directory.
    pub database_url: Option<&'a SecretString>,
    /// Master keys from the environment, instead of the keyring file.
    pub master_key: Option<&'a MasterKey>,
}

/// Master keys given by the operator (base64 of 32 bytes each): the key, and while a
/// rotation rolls out the key it replaces, which the first start re-wraps every credential
/// away from. `Debug` shows neither.
#[derive(Debug, Clone)]
pub struct MasterKey {
    /// `LEVELRAIL_MASTER_KEY`.
    pub current: SecretString,
    /// `LEVELRAIL_MASTER_KEY_PREVIOUS`.
    pub previous: Option<SecretString>,
}

/// Creates the data directory owner-only when missing, and makes it owner-only again at
/// every start when someone opened it to the group or others (it holds the keys). A
/// directory this process does not own (a volume mounted for it, such as Kubernetes'
/// `emptyDir`) cannot be changed: that is logged, and the files in it stay owner-only.
pub fn ensure_data_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let meta = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    anyhow::ensure!(meta.is_dir(), "{} is not a directory", dir.display());
    let mode = meta.permissions().mode() & 0o777;
    if mode == 0o700 {
        return Ok(());
    }
    match std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)) {
        Ok(()) if mode & 0o077 != 0 => {
            tracing::warn!(dir = %dir.display(), mode = format!("{mode:04o}"), "the data directory was open to others; it is owner-only (0700) again");
        }
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::warn!(dir = %dir.display(), mode = format!("{mode:04o}"), "the data directory belongs to another user, so it cannot be made owner-only; its key files are");
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "restricting {} to its owner (mode 0700)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Opens the credentials service. Also finishes any master-key rotation an earlier run
/// left half done.
pub async fn open(
    cfg: StorageConfig<'_>,
    verifier: Verifier,
    issuer: Arc<dyn GrantIssuer>,
) -> anyhow::Result<Credentials> {
    ensure_data_dir(cfg.data_dir)?;
    let source = match cfg.master_key {
        Some(keys) => MasterKeySource::Env(Arc::new(keyring_from_env_keys(
            keys.current.expose_secret(),
            keys.previous.as_ref().map(|k| k.expose_secret()),
        )?)),
        None => MasterKeySource::File(cfg.data_dir.join("master.key")),
    };
    let files = SealedFiles::new(cfg.data_dir);
    let (keys, created) =
        KeyringHandle::open(source, files).context("opening the master keyring")?;
    if created {
        tracing::info!("created a new master keyring in the data directory");
    }
    let default_dsn = format!("sqlite://{}", cfg.data_dir.join("credentials.db").display());
    let dsn = cfg
        .database_url
        .map(|s| s.expose_secret().to_owned())
        .unwrap_or(default_dsn);
    let store = crate::store::open(&dsn)
        .await
        .context("opening the credentials database")?;
    let credentials = Credentials::new(store, keys, verifier, issuer);
    let report = credentials
        .resume_rotation()
        .await
        .context("finishing a master-key rotation")?;
    if report.rewrapped > 0 || !report.retired.is_empty() {
        tracing::info!(rewrapped = report.rewrapped, retired = ?report.retired, "finished an interrupted master-key rotation");
    }
    Ok(credentials)
}

#[cfg(test)]
mod data_dir_tests {
    use super::*;

    #[test]
    fn the_data_directory_is_owner_only_at_every_start() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        ensure_data_dir(&dir).expect("created");
        let mode = |d: &Path| std::fs::metadata(d).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        ensure_data_dir(&dir).expect("restricted again");
        assert_eq!(mode(&dir), 0o700);
        let file = tmp.path().join("file");
        std::fs::write(&file, b"").expect("file");
        assert!(
            ensure_data_dir(&file).is_err(),
            "a file is no data directory"
        );
    }
}
