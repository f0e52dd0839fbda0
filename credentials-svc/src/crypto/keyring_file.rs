//! The keyring file: a 0600 JSON file of local key-encryption keys, created on first start,
//! replaced atomically, and changed only through the resumable rotation steps.
//!
//! ```json
//! {"format":1,"keys":[{"id":"k1","state":"primary","key":"<base64 of 32 bytes>",
//!   "created_at":"2026-01-01T00:00:00Z"}],"retired":["k0"]}
//! ```
//!
//! `retired` (optional) lists ids removed by [`KeyringFile::retire`] so they are never reused.
//! Every change is one atomic replace (temp file 0600 in the same directory, fsync, rename,
//! fsync of the directory) under an advisory lock on `.<name>.lock`, so a crash between two
//! steps leaves a valid file from which the next step resumes.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore as _;
use rand::rngs::OsRng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use zeroize::Zeroizing;

use super::kek::{DATA_KEY_LEN, KeyEncryptionKey, LocalKek};
use super::keyring::decode_key;
use super::{CryptoError, KeyState, Keyring};

/// The keyring file format this module reads and writes.
pub const KEYRING_FILE_FORMAT: u32 = 1;
/// A keyring file is a handful of keys; anything larger is not one.
const MAX_FILE_LEN: u64 = 1 << 20;

/// A keyring persisted in a JSON file. Holds only the path; every method re-reads the file,
/// so separate processes (the service and `rotate-master-key`) can share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyringFile {
    path: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContents {
    format: u32,
    keys: Vec<FileKey>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    retired: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileKey {
    id: String,
    state: KeyState,
    key: B64Key,
    created_at: String,
}

/// Base64 key material, zeroized on drop.
struct B64Key(Zeroizing<String>);

impl Serialize for B64Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for B64Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| B64Key(Zeroizing::new(s)))
    }
}

impl KeyringFile {
    /// The keyring file at `path` (nothing is read yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the file lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the keyring, creating the file with one primary key `k1` if it does not exist.
    /// Returns the keyring and whether the file was created. Never overwrites an existing
    /// file, even one created concurrently.
    pub fn load_or_create(&self) -> Result<(Keyring, bool), CryptoError> {
        // The common case needs no lock, so a keyring on a read-only mount loads too.
        if let Some(contents) = self.read()? {
            return Ok((to_keyring(&contents)?, false));
        }
        let _lock = self.lock()?;
        if let Some(contents) = self.read()? {
            return Ok((to_keyring(&contents)?, false));
        }
        let contents = FileContents {
            format: KEYRING_FILE_FORMAT,
            keys: vec![new_key("k1", KeyState::Primary)?],
            retired: Vec::new(),
        };
        let ring = to_keyring(&contents)?;
        if self.create(&serialize(&contents)?)? {
            Ok((ring, true))
        } else {
            // Someone created it between our read and our link (without taking the lock).
            Ok((self.load()?, false))
        }
    }

    /// Loads the keyring; fails if the file is missing, group/world accessible or invalid.
    pub fn load(&self) -> Result<Keyring, CryptoError> {
        match self.read()? {
            Some(contents) => to_keyring(&contents),
            None => Err(self.error("does not exist")),
        }
    }

    /// Rotation step 1: adds a fresh random key in state `active` and returns its id
    /// (`k<n>`, one above the highest id ever used).
    pub fn add_key(&self) -> Result<String, CryptoError> {
        let mut added = String::new();
        self.update(|c| {
            let next = c
                .keys
                .iter()
                .map(|k| &k.id)
                .chain(&c.retired)
                .filter_map(|id| key_number(id))
                .max();
            added = format!("k{}", next.unwrap_or(0).saturating_add(1));
            c.keys.push(new_key(&added, KeyState::Active)?);
            Ok(true)
        })?;
        Ok(added)
    }

    /// Rotation step 2: makes `id` the primary and the former primary `retiring`. A no-op if
    /// `id` is already the primary.
    pub fn promote(&self, id: &str) -> Result<(), CryptoError> {
        self.update(|c| {
            match c.keys.iter().find(|k| k.id == id).map(|k| k.state) {
                None => return Err(unknown(id)),
                Some(KeyState::Primary) => return Ok(false),
                Some(KeyState::Active | KeyState::Retiring) => {}
            }
            for key in &mut c.keys {
                key.state = match key.state {
                    _ if key.id == id => KeyState::Primary,
                    KeyState::Primary => KeyState::Retiring,
                    other => other,
                };
            }
            Ok(true)
        })
    }

    /// Rotation step 4 (after every row is re-wrapped): removes the `retiring` key `id` for
    /// good. Refuses the primary and active keys; a no-op if `id` was already retired.
    pub fn retire(&self, id: &str) -> Result<(), CryptoError> {
        self.update(
            |c| match c.keys.iter().find(|k| k.id == id).map(|k| k.state) {
                None if c.retired.iter().any(|r| r == id) => Ok(false),
                None => Err(unknown(id)),
                Some(KeyState::Primary) => Err(CryptoError::Keyring(format!(
                    "refusing to retire the primary key {id:?}"
                ))),
                Some(KeyState::Active) => Err(CryptoError::Keyring(format!(
                    "key {id:?} was never primary; only a retiring key can be retired"
                ))),
                Some(KeyState::Retiring) => {
                    c.keys.retain(|k| k.id != id);
                    c.retired.push(id.to_owned());
                    Ok(true)
                }
            },
        )
    }

    /// Reads, changes and (if `change` says so) atomically rewrites the file, under the lock.
    fn update(
        &self,
        change: impl FnOnce(&mut FileContents) -> Result<bool, CryptoError>,
    ) -> Result<(), CryptoError> {
        let _lock = self.lock()?;
        let mut contents = self.read()?.ok_or_else(|| self.error("does not exist"))?;
        to_keyring(&contents)?;
        if change(&mut contents)? {
            to_keyring(&contents)?;
            self.replace(&serialize(&contents)?)?;
        }
        Ok(())
    }

    /// The parsed file, `None` if it does not exist. Checks mode and size on the opened
    /// descriptor, so what is checked is what is read.
    fn read(&self) -> Result<Option<FileContents>, CryptoError> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.error(&format!("cannot be opened: {e}"))),
        };
        let meta = file.metadata()?;
        let mode = meta.permissions().mode() & 0o777;
        if !meta.is_file() {
            return Err(self.error("is not a regular file"));
        }
        if mode & 0o077 != 0 {
            return Err(self.error(&format!(
                "has mode {mode:04o}; it must not be accessible to group or others (chmod 600)"
            )));
        }
        if meta.len() > MAX_FILE_LEN {
            return Err(self.error("is larger than 1 MiB"));
        }
        let mut buf = Zeroizing::new(Vec::with_capacity(
            usize::try_from(meta.len()).unwrap_or(0) + 1,
        ));
        (&mut file).take(MAX_FILE_LEN).read_to_end(&mut buf)?;
        // serde_json's message can quote the offending value, which may be key material:
        // report only the kind of error and where it is.
        let contents: FileContents = serde_json::from_slice(&buf).map_err(|e| {
            self.error(&format!(
                "is not a valid keyring ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            ))
        })?;
        if contents.format != KEYRING_FILE_FORMAT {
            return Err(self.error(&format!("has unsupported format {}", contents.format)));
        }
        Ok(Some(contents))
    }

    fn error(&self, what: &str) -> CryptoError {
        CryptoError::Keyring(format!("keyring file {} {what}", self.path.display()))
    }

    fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    fn sibling(&self, suffix: &str) -> Result<PathBuf, CryptoError> {
        let name = self
            .path
            .file_name()
            .ok_or_else(|| self.error("path has no file name"))?;
        let mut sibling = std::ffi::OsString::from(".");
        sibling.push(name);
        sibling.push(suffix);
        Ok(self.dir().join(sibling))
    }

    /// Takes the advisory lock serialising writers (threads and processes alike).
    fn lock(&self) -> Result<File, CryptoError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(self.sibling(".lock")?)?;
        file.lock()?;
        Ok(file)
    }

    /// Writes `bytes` to a new 0600 temp file next to the keyring and fsyncs it.
    fn write_temp(&self, bytes: &[u8]) -> Result<PathBuf, CryptoError> {
        let mut tag = [0u8; 8];
        OsRng.fill_bytes(&mut tag);
        let tmp = self.sibling(&format!(".tmp-{}", hex::encode(tag)))?;
        write_new_private(&tmp, bytes)?;
        Ok(tmp)
    }

    /// Atomically replaces the file.
    fn replace(&self, bytes: &[u8]) -> Result<(), CryptoError> {
        let tmp = self.write_temp(bytes)?;
        rename_durably(&tmp, &self.path, self.dir())
    }

    /// Atomically creates the file; `false` if it already exists (it is left untouched).
    fn create(&self, bytes: &[u8]) -> Result<bool, CryptoError> {
        let tmp = self.write_temp(bytes)?;
        // A hard link, unlike rename, fails instead of replacing an existing file: losing a
        // keyring means losing every credential.
        let linked = fs::hard_link(&tmp, &self.path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                File::open(self.dir())?.sync_all()?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Writes `bytes` to the new 0600 file `tmp` and fsyncs it; on failure `tmp` is removed.
pub(crate) fn write_new_private(tmp: &Path, bytes: &[u8]) -> Result<(), CryptoError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        let _ = fs::remove_file(tmp);
        return Err(e.into());
    }
    Ok(())
}

/// Renames `tmp` over `path` and fsyncs their directory `dir`; on failure `tmp` is removed.
pub(crate) fn rename_durably(tmp: &Path, path: &Path, dir: &Path) -> Result<(), CryptoError> {
    if let Err(e) = fs::rename(tmp, path) {
        let _ = fs::remove_file(tmp);
        return Err(e.into());
    }
    Ok(File::open(dir)?.sync_all()?)
}

fn unknown(id: &str) -> CryptoError {
    CryptoError::Keyring(format!("no key {id:?} in the keyring file"))
}

/// `n` for ids of the canonical form `k<n>` (`n` ≥ 1, no leading zeros).
fn key_number(id: &str) -> Option<u64> {
    let n: u64 = id.strip_prefix('k')?.parse().ok()?;
    (n > 0 && format!("k{n}") == id).then_some(n)
}

fn new_key(id: &str, state: KeyState) -> Result<FileKey, CryptoError> {
    let mut raw = Zeroizing::new([0u8; DATA_KEY_LEN]);
    OsRng.fill_bytes(&mut *raw);
    let mut key = Zeroizing::new(String::with_capacity(48));
    // By reference: passing the array by value would leave an unzeroized copy.
    STANDARD.encode_string(raw.as_slice(), &mut key);
    let created_at = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .map_err(|_| CryptoError::Keyring("cannot format the current time".into()))?;
    Ok(FileKey {
        id: id.to_owned(),
        state,
        key: B64Key(key),
        created_at,
    })
}

/// Validates the contents and builds the keyring. Texts name key ids (when valid) but never
/// quote key material.
fn to_keyring(contents: &FileContents) -> Result<Keyring, CryptoError> {
    let mut keys: Vec<(Arc<dyn KeyEncryptionKey>, KeyState)> = Vec::new();
    for key in &contents.keys {
        // Only `k<n>` ids: anything else (say, key material pasted into the wrong field)
        // would end up in envelopes and logs.
        if key_number(&key.id).is_none() {
            return Err(CryptoError::Keyring(
                "keyring file has a key whose id is not of the form k<n>".into(),
            ));
        }
        let bad = |what: &str| CryptoError::Keyring(format!("key {:?} {what}", key.id));
        OffsetDateTime::parse(&key.created_at, &Rfc3339)
            .map_err(|_| bad("has a created_at that is not RFC 3339"))?;
        let secret = decode_key(&key.key.0).ok_or_else(|| bad("is not base64 of 32 bytes"))?;
        keys.push((Arc::new(LocalKek::new(key.id.clone(), secret)?), key.state));
    }
    Keyring::new(keys)
}

fn serialize(contents: &FileContents) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    // Sized generously so the buffer holding key material never reallocates.
    let mut out = Zeroizing::new(Vec::with_capacity(1024 + 256 * contents.keys.len()));
    serde_json::to_writer_pretty(&mut *out, contents)
        .map_err(|_| CryptoError::Keyring("cannot serialize the keyring".into()))?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests;
