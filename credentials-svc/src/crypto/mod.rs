//! Envelope encryption of credentials: per-credential data keys wrapped by a keyring of
//! key-encryption keys.
//!
//! * [`seal`] / [`open`] / [`rewrap`] handle the binary envelope (format 1; the layout and
//!   the AAD are documented in `crypto/envelope.rs`).
//! * [`KeyEncryptionKey`] is the seam for key-encryption keys; [`LocalKek`] is the
//!   AES-256-GCM implementation backed by the keyring file or `LEVELRAIL_MASTER_KEY`, and a
//!   KMS-backed key can implement the same trait later.
//! * [`Keyring`] holds the keys with their rotation state; [`KeyringFile`] persists them and
//!   offers the resumable rotation steps (add → promote → re-wrap → retire).
//!
//! No type here implements `Serialize` for key material, every `Debug` prints key ids only,
//! and no error text carries plaintext or key bytes.
mod envelope;
mod gcm;
mod kek;
mod keyring;
mod keyring_file;

pub use envelope::{
    AadContext, FORMAT_VERSION, MAGIC, MAX_CONTEXT_FIELD_LEN, MAX_ENVELOPE_LEN, MAX_PLAINTEXT_LEN,
    MAX_WRAPPED_DEK_LEN, envelope_kek_id, open, rewrap, seal,
};
pub use kek::{DATA_KEY_LEN, DataKey, KeyEncryptionKey, LocalKek, MAX_KEK_ID_LEN, is_valid_kek_id};
pub use keyring::{ENV_KEY_ID, KeyState, Keyring, env_key_id, keyring_from_env_keys};
pub use keyring_file::{KEYRING_FILE_FORMAT, KeyringFile};
pub(crate) use keyring_file::{rename_durably, write_new_private};

/// Length of every AES-GCM nonce this module produces or accepts (96 bits).
pub const NONCE_LEN: usize = gcm::NONCE_LEN;
/// Length of the AES-GCM authentication tag.
pub const TAG_LEN: usize = gcm::TAG_LEN;

/// What can go wrong while sealing, opening or managing keys. Display texts never contain
/// plaintext, key bytes or the value of `LEVELRAIL_MASTER_KEY`.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// The envelope (or a field of it, or an input) cannot be parsed or is over a size
    /// limit. Detected before any cryptographic operation.
    #[error("malformed envelope: {0}")]
    Malformed(&'static str),
    /// Authentication failed: wrong key, wrong row (AAD), or tampered data.
    #[error("decryption failed: wrong key, wrong credential, or tampered data")]
    Decrypt,
    /// The envelope names a key-encryption key that is not in the keyring (retired too
    /// early, or the wrong keyring). The id is printable ASCII of at most 255 bytes.
    #[error("key-encryption key {0:?} is not in the keyring")]
    UnknownKey(String),
    /// The keyring (file, environment value or key list) is unusable.
    #[error("keyring: {0}")]
    Keyring(String),
    /// Reading or writing the keyring file failed.
    #[error("keyring file I/O")]
    Io(#[from] std::io::Error),
}
