//! Sealing a provision's join token for the database. The secret is needed again only if
//! the server create must be repeated after a restart, so it is kept AES-256-GCM-encrypted
//! under a key the caller supplies (32 bytes; `enroll::sealing_key` keeps it in a 0600 file
//! of the data directory), with
//! the provision id as associated data: a sealed token copied to another provision's row
//! does not open. The row's copy is wiped once the provision is terminal.
//!
//! Layout: `0x01 ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
use std::fmt;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use rand::RngCore as _;
use rand::rngs::OsRng;
use secrecy::{ExposeSecret as _, SecretBox, SecretString};
use zeroize::Zeroizing;

use super::ProvisionId;

const VERSION: u8 = 1;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// The key length (AES-256).
const KEY_LEN: usize = 32;
/// Domain separation of the associated data.
const AAD_PREFIX: &str = "levelrail/provision-join-token/v1:";
/// Domain separation of secrets kept in the shared database under a name.
const NAMED_AAD_PREFIX: &str = "levelrail/control-plane-secret/v1:";

/// Why a token could not be sealed or opened, or a key not loaded. Never carries data.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// Wrong key, wrong provision, or a modified blob.
    #[error(
        "the sealed secret does not open with this key for this row (wrong key, wrong row, or modified)"
    )]
    Open,
    /// The blob is not in the sealed format.
    #[error("the sealed secret is malformed")]
    Malformed,
    /// The key file could not be read or written, or is not 32 bytes.
    #[error("sealing key file: {0}")]
    KeyFile(String),
}

/// The key sealing join tokens at rest. `Debug` shows nothing of it.
pub struct SealingKey(SecretBox<[u8; KEY_LEN]>);

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealingKey(<redacted>)")
    }
}

impl Clone for SealingKey {
    fn clone(&self) -> Self {
        Self::from_bytes(*self.0.expose_secret())
    }
}

impl SealingKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        SealingKey(SecretBox::new(Box::new(bytes)))
    }

    /// A fresh random key.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        OsRng.fill_bytes(bytes.as_mut_slice());
        Self::from_bytes(*bytes)
    }

    /// The key's bytes: for the progress credential's MAC (`progress.rs`), and for the
    /// key file.
    pub fn expose_bytes(&self) -> &[u8; KEY_LEN] {
        self.0.expose_secret()
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(self.0.expose_secret()))
    }

    /// Seals `token` for provision `id`.
    pub fn seal(&self, id: &ProvisionId, token: &SecretString) -> Result<Vec<u8>, SealError> {
        self.seal_for(&aad(id), token)
    }

    /// Opens a token sealed for provision `id`.
    pub fn open(&self, id: &ProvisionId, sealed: &[u8]) -> Result<SecretString, SealError> {
        self.open_for(&aad(id), sealed)
    }

    /// Seals a control-plane secret kept in the shared database (the node CA's key), bound
    /// to its `name`.
    pub fn seal_named(&self, name: &str, secret: &SecretString) -> Result<Vec<u8>, SealError> {
        self.seal_for(&format!("{NAMED_AAD_PREFIX}{name}"), secret)
    }

    /// Opens a secret sealed under `name`.
    pub fn open_named(&self, name: &str, sealed: &[u8]) -> Result<SecretString, SealError> {
        self.open_for(&format!("{NAMED_AAD_PREFIX}{name}"), sealed)
    }

    fn seal_for(&self, aad: &str, secret: &SecretString) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let plain = secret.expose_secret().as_bytes();
        let mut buf = Vec::with_capacity(1 + NONCE_LEN + plain.len() + TAG_LEN);
        buf.push(VERSION);
        buf.extend_from_slice(&nonce);
        let mut body = Zeroizing::new(Vec::with_capacity(plain.len() + TAG_LEN));
        body.extend_from_slice(plain);
        self.cipher()
            .encrypt_in_place(Nonce::from_slice(&nonce), aad.as_bytes(), &mut *body)
            .map_err(|_| SealError::Malformed)?;
        buf.extend_from_slice(&body);
        Ok(buf)
    }

    fn open_for(&self, aad: &str, sealed: &[u8]) -> Result<SecretString, SealError> {
        let (&version, rest) = sealed.split_first().ok_or(SealError::Malformed)?;
        if version != VERSION || rest.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::Malformed);
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let mut buf = Zeroizing::new(body.to_vec());
        self.cipher()
            .decrypt_in_place(Nonce::from_slice(nonce), aad.as_bytes(), &mut *buf)
            .map_err(|_| SealError::Open)?;
        let text = std::str::from_utf8(&buf).map_err(|_| SealError::Malformed)?;
        Ok(SecretString::from(text.to_owned()))
    }
}

fn aad(id: &ProvisionId) -> String {
    format!("{AAD_PREFIX}{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> SecretString {
        SecretString::from("LR1.abc.njt_0123456789abcdef.secret-part".to_owned())
    }

    #[test]
    fn a_sealed_token_opens_for_its_provision_only() {
        let key = SealingKey::generate();
        let (a, b) = (ProvisionId::generate(), ProvisionId::generate());

        let sealed = key.seal(&a, &token()).expect("seal");

        assert_eq!(
            key.open(&a, &sealed).expect("open").expose_secret(),
            token().expose_secret()
        );
        assert!(
            matches!(key.open(&b, &sealed), Err(SealError::Open)),
            "moved to another row"
        );
        assert!(matches!(
            SealingKey::generate().open(&a, &sealed),
            Err(SealError::Open)
        ));
        assert!(
            !sealed.windows(6).any(|w| w == b"secret"),
            "plaintext in the blob"
        );
    }

    #[test]
    fn a_named_secret_opens_under_its_name_only_and_never_as_a_join_token() {
        let key = SealingKey::generate();
        let sealed = key.seal_named("node-ca", &token()).expect("seal");
        assert_eq!(
            key.open_named("node-ca", &sealed)
                .expect("open")
                .expose_secret(),
            token().expose_secret()
        );
        assert!(matches!(
            key.open_named("other", &sealed),
            Err(SealError::Open)
        ));
        let id = ProvisionId::generate();
        assert!(matches!(key.open(&id, &sealed), Err(SealError::Open)));
    }

    #[test]
    fn any_flipped_bit_is_refused() {
        let key = SealingKey::generate();
        let id = ProvisionId::generate();
        let sealed = key.seal(&id, &token()).expect("seal");
        for i in 0..sealed.len() * 8 {
            let mut bad = sealed.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(key.open(&id, &bad).is_err(), "bit {i}");
        }
        assert!(matches!(key.open(&id, &[]), Err(SealError::Malformed)));
    }
}
