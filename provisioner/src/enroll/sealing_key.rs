//! The file the provision sealing key lives in: 32 raw bytes, mode 0600, in the data
//! directory beside the CA key.
use std::io::Read as _;
use std::path::Path;

use zeroize::Zeroizing;

use crate::enroll::ca::write_private;
use crate::model::provision::{SealError, SealingKey};

/// Reads the key from `path` (exactly 32 raw bytes), or creates the file (mode 0600) with a
/// fresh key when it does not exist. Errors name the problem, never the bytes.
pub fn load_or_create(path: &Path) -> Result<SealingKey, SealError> {
    match std::fs::File::open(path) {
        Ok(file) => read_key(file, Private::Required),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SealingKey::generate();
            write_private(path, key.expose_bytes())
                .map_err(|e| SealError::KeyFile(e.to_string()))?;
            Ok(key)
        }
        Err(e) => Err(SealError::KeyFile(e.to_string())),
    }
}

/// Reads the key from `path`, which must exist (a key several processes share is made
/// once, by the operator, and mounted as a secret: a Kubernetes secret volume with an
/// `fsGroup` is group-readable by design, so group access is logged, not refused; access
/// for every user is refused).
pub fn load(path: &Path) -> Result<SealingKey, SealError> {
    let file = std::fs::File::open(path).map_err(|e| SealError::KeyFile(e.to_string()))?;
    read_key(file, Private::GroupMayRead)
}

/// Who besides the owner may read a key file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Private {
    /// No one (the file this process made in its data directory).
    Required,
    /// Its group (an operator's mounted secret), with a warning.
    GroupMayRead,
}

fn read_key(mut file: std::fs::File, private: Private) -> Result<SealingKey, SealError> {
    use std::os::unix::fs::PermissionsExt as _;
    // Checked on the opened file: what is checked is what is read.
    let meta = file
        .metadata()
        .map_err(|e| SealError::KeyFile(e.to_string()))?;
    if !meta.is_file() {
        return Err(SealError::KeyFile("it is not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    let refused = match private {
        Private::Required => mode & 0o077 != 0,
        Private::GroupMayRead => mode & 0o027 != 0,
    };
    if refused {
        return Err(SealError::KeyFile(format!(
            "it has mode {mode:04o}; it must not be accessible to others{} (chmod 600)",
            if private == Private::Required {
                " or its group"
            } else {
                ", nor writable by its group"
            }
        )));
    }
    if mode & 0o070 != 0 {
        tracing::warn!(
            mode = format!("{mode:04o}"),
            "the provision sealing key file is readable by its group"
        );
    }
    let mut bytes = Zeroizing::new(Vec::with_capacity(33));
    file.read_to_end(&mut bytes)
        .map_err(|e| SealError::KeyFile(e.to_string()))?;
    let array: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| SealError::KeyFile("the file does not hold exactly 32 bytes".into()))?;
    Ok(SealingKey::from_bytes(array))
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;
    use crate::model::provision::ProvisionId;

    fn token() -> SecretString {
        SecretString::from("LR1.abc.njt_0123456789abcdef.secret-part".to_owned())
    }

    #[test]
    fn the_key_file_is_created_0600_and_read_back() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("provision-seal.key");
        let id = ProvisionId::generate();

        let sealed = load_or_create(&path)
            .expect("create")
            .seal(&id, &token())
            .expect("seal");
        let again = load_or_create(&path).expect("load");

        assert!(again.open(&id, &sealed).is_ok());
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let refused = load_or_create(&path).expect_err("a key others may read is refused");
        assert!(refused.to_string().contains("0640"), "{refused}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&path, b"short").expect("write");
        assert!(matches!(load_or_create(&path), Err(SealError::KeyFile(_))));
        assert_eq!(format!("{again:?}"), "SealingKey(<redacted>)");
    }
}
