//! Files of the data directory sealed with the master keyring (`<name>.sealed`, mode 0600):
//! secrets of the server itself, such as the node CA's private key, kept in the same
//! envelope as credentials. A master-key rotation re-wraps them with the stored
//! credentials, before it retires a key, so a retired key never strands one.
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rand::RngCore as _;
use rand::rngs::OsRng;
use zeroize::Zeroizing;

use crate::crypto::{self, AadContext, CryptoError, Keyring, rename_durably, write_new_private};

/// The extension of a sealed file.
const SEALED: &str = "sealed";
/// The envelope's "provider" for a file of the server: no credential row has it.
const FILE_CONTEXT: &str = "levelrail-data-dir";
/// A sealed file is a small key; anything larger is not one.
const MAX_LEN: u64 = 1 << 20;

/// The sealed files of one data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedFiles {
    dir: PathBuf,
}

impl SealedFiles {
    /// The sealed files of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SealedFiles { dir: dir.into() }
    }

    /// The path of the sealed file `name` (`<dir>/<name>.sealed`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.{SEALED}"))
    }

    /// Opens the sealed file `name`; `None` when there is none.
    pub fn read(
        &self,
        ring: &Keyring,
        name: &str,
    ) -> Result<Option<Zeroizing<Vec<u8>>>, CryptoError> {
        check_name(name)?;
        let Some(envelope) = read_small(&self.path(name))? else {
            return Ok(None);
        };
        crypto::open(ring, &context(name), &envelope).map(Some)
    }

    /// Seals `plaintext` under `ring`'s primary key and writes it as the file `name`
    /// (0600, atomically: a crash leaves the old file or the new one).
    pub fn write(&self, ring: &Keyring, name: &str, plaintext: &[u8]) -> Result<(), CryptoError> {
        check_name(name)?;
        let envelope = crypto::seal(ring.primary().as_ref(), &context(name), plaintext)?;
        replace(&self.path(name), &envelope)
    }

    /// Re-wraps every sealed file not on `ring`'s primary key; returns how many.
    pub fn rewrap_all(&self, ring: &Keyring) -> Result<usize, CryptoError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut rewrapped = 0;
        for entry in entries {
            let path = entry?.path();
            let Some(name) = sealed_name(&path) else {
                continue;
            };
            let Some(envelope) = read_small(&path)? else {
                continue;
            };
            if crypto::envelope_kek_id(&envelope)? == ring.primary().id() {
                continue;
            }
            let next = crypto::rewrap(ring, &context(&name), &envelope)?;
            replace(&path, &next)?;
            rewrapped += 1;
        }
        Ok(rewrapped)
    }
}

fn context(name: &str) -> AadContext<'_> {
    AadContext {
        credential_id: name,
        provider: FILE_CONTEXT,
    }
}

/// A name is a plain file name: no directory in it, nothing hidden.
fn check_name(name: &str) -> Result<(), CryptoError> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_');
    if plain {
        Ok(())
    } else {
        Err(CryptoError::Malformed("sealed file name"))
    }
}

/// `name` of `<dir>/<name>.sealed`.
fn sealed_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let name = file.strip_suffix(&format!(".{SEALED}"))?;
    check_name(name).ok()?;
    Some(name.to_owned())
}

fn read_small(path: &Path) -> Result<Option<Vec<u8>>, CryptoError> {
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
        Ok(meta) if meta.len() > MAX_LEN => {
            return Err(CryptoError::Malformed("sealed file over 1 MiB"));
        }
        Ok(_) => {}
    }
    Ok(Some(fs::read(path)?))
}

/// Replaces `path` with `bytes` atomically (a new 0600 file beside it, fsynced, renamed
/// over it, the directory fsynced).
fn replace(path: &Path, bytes: &[u8]) -> Result<(), CryptoError> {
    let dir = path
        .parent()
        .ok_or(CryptoError::Malformed("sealed file path"))?;
    let mut tag = [0u8; 8];
    OsRng.fill_bytes(&mut tag);
    let tmp = dir.join(format!(".sealed-tmp-{}", hex::encode(tag)));
    write_new_private(&tmp, bytes)?;
    rename_durably(&tmp, path, dir)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::Arc;

    use secrecy::SecretBox;

    use super::*;
    use crate::crypto::{KeyEncryptionKey, KeyState, LocalKek};

    fn ring(keys: &[(&str, u8, KeyState)]) -> Keyring {
        let kek = |id: &str, fill: u8| -> Arc<dyn KeyEncryptionKey> {
            Arc::new(LocalKek::new(id, SecretBox::new(Box::new([fill; 32]))).expect("kek"))
        };
        Keyring::new(
            keys.iter()
                .map(|(id, fill, s)| (kek(id, *fill), *s))
                .collect(),
        )
        .expect("ring")
    }

    #[test]
    fn a_sealed_file_opens_with_its_key_and_name_only_and_is_owner_only() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let files = SealedFiles::new(tmp.path());
        let k1 = ring(&[("k1", 1, KeyState::Primary)]);
        assert!(files.read(&k1, "ca.key").expect("read").is_none());
        files
            .write(&k1, "ca.key", b"-----BEGIN PRIVATE KEY-----")
            .expect("write");
        let path = files.path("ca.key");
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let on_disk = fs::read(&path).expect("bytes");
        assert!(
            !on_disk.windows(7).any(|w| w == b"PRIVATE"),
            "plaintext on disk"
        );
        let opened = files.read(&k1, "ca.key").expect("read").expect("some");
        assert_eq!(opened.as_slice(), b"-----BEGIN PRIVATE KEY-----");
        // Another key, or the same envelope under another name, does not open.
        let other = ring(&[("k1", 2, KeyState::Primary)]);
        assert!(files.read(&other, "ca.key").is_err());
        fs::copy(&path, files.path("other.key")).expect("copy");
        assert!(files.read(&k1, "other.key").is_err());
        for bad in ["../ca.key", ".hidden", "", "a/b"] {
            assert!(files.write(&k1, bad, b"x").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rotation_rewraps_every_sealed_file_so_the_old_key_can_go() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let files = SealedFiles::new(tmp.path());
        let k1 = ring(&[("k1", 1, KeyState::Primary)]);
        files.write(&k1, "ca.key", b"first").expect("write");
        files.write(&k1, "other", b"second").expect("write");
        fs::write(tmp.path().join("unrelated.txt"), b"not sealed").expect("write");
        let rotating = ring(&[("k1", 1, KeyState::Retiring), ("k2", 2, KeyState::Primary)]);
        assert_eq!(files.rewrap_all(&rotating).expect("rewrap"), 2);
        assert_eq!(files.rewrap_all(&rotating).expect("again"), 0);
        let k2 = ring(&[("k2", 2, KeyState::Primary)]);
        let opened = files.read(&k2, "ca.key").expect("read").expect("some");
        assert_eq!(opened.as_slice(), b"first");
        let opened = files.read(&k2, "other").expect("read").expect("some");
        assert_eq!(opened.as_slice(), b"second");
    }
}
