//! Key-encryption keys: the trait every KEK implements (local today, KMS later), the local
//! AES-256-GCM KEK, and the per-credential data key it wraps.
use std::fmt;

use rand::RngCore;
use rand::rngs::OsRng;
use secrecy::{ExposeSecret, SecretBox};

use super::CryptoError;
use super::gcm::{self, KEY_LEN, NONCE_LEN, TAG_LEN};

/// Length of a data key (AES-256).
pub const DATA_KEY_LEN: usize = 32;
/// Longest key-encryption-key id an envelope can carry.
pub const MAX_KEK_ID_LEN: usize = 255;

/// Length of a [`LocalKek`]-wrapped data key: nonce ‖ encrypted key ‖ tag.
const LOCAL_WRAPPED_LEN: usize = NONCE_LEN + DATA_KEY_LEN + TAG_LEN;

/// Whether `id` can name a key-encryption key: 1 to 255 bytes of printable ASCII without
/// spaces. Ids appear in envelopes, logs and error texts, so nothing else is allowed.
pub fn is_valid_kek_id(id: &str) -> bool {
    (1..=MAX_KEK_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

fn check_id(id: &str) -> Result<(), CryptoError> {
    if is_valid_kek_id(id) {
        Ok(())
    } else {
        Err(CryptoError::Keyring(
            "a key id must be 1 to 255 bytes of printable ASCII without spaces".into(),
        ))
    }
}

/// A per-credential data key: 32 random bytes, zeroized on drop. Deliberately neither
/// `Clone` nor `Serialize`, and its `Debug` is redacted.
pub struct DataKey(SecretBox<[u8; DATA_KEY_LEN]>);

impl DataKey {
    /// A fresh random key from the OS. Panics only if the OS random source fails, which is
    /// not recoverable (continuing would produce predictable keys).
    pub fn generate() -> Self {
        Self(SecretBox::init_with_mut(|k: &mut [u8; DATA_KEY_LEN]| {
            OsRng.fill_bytes(k)
        }))
    }

    /// A data key from exactly 32 bytes (for KEK implementations that unwrap remotely).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, CryptoError> {
        if bytes.len() != DATA_KEY_LEN {
            return Err(CryptoError::Malformed("a data key must be 32 bytes"));
        }
        Ok(Self(SecretBox::init_with_mut(
            |k: &mut [u8; DATA_KEY_LEN]| k.copy_from_slice(bytes),
        )))
    }

    /// The key bytes, for encrypting with them or handing them to a KEK.
    pub fn expose_secret(&self) -> &[u8; DATA_KEY_LEN] {
        self.0.expose_secret()
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([REDACTED])")
    }
}

/// A key-encryption key: wraps and unwraps data keys, binding each wrap to `aad`. A KMS
/// implementation can replace [`LocalKek`] behind this trait. `Debug` must not print key
/// material.
pub trait KeyEncryptionKey: Send + Sync + fmt::Debug {
    /// The key id recorded in envelopes; must satisfy [`is_valid_kek_id`].
    fn id(&self) -> &str;
    /// Encrypts `dek` under this key, authenticating `aad`.
    fn wrap(&self, dek: &DataKey, aad: &[u8]) -> Result<Vec<u8>, CryptoError>;
    /// Reverses [`wrap`](Self::wrap); fails with [`CryptoError::Decrypt`] if `wrapped` or
    /// `aad` differ in any bit from what was wrapped.
    fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<DataKey, CryptoError>;
}

/// A key-encryption key held in this process: AES-256-GCM with a random 96-bit nonce
/// prepended to each wrapped key. `Debug` prints the id only.
pub struct LocalKek {
    id: String,
    key: SecretBox<[u8; KEY_LEN]>,
}

impl LocalKek {
    /// A KEK named `id` (see [`is_valid_kek_id`]) over the given 32-byte key.
    pub fn new(id: impl Into<String>, key: SecretBox<[u8; KEY_LEN]>) -> Result<Self, CryptoError> {
        let id = id.into();
        check_id(&id)?;
        Ok(Self { id, key })
    }

    /// A KEK named `id` over a fresh random key (tests and ephemeral setups).
    pub fn generate(id: impl Into<String>) -> Result<Self, CryptoError> {
        Self::new(
            id,
            SecretBox::init_with_mut(|k: &mut [u8; KEY_LEN]| OsRng.fill_bytes(k)),
        )
    }
}

impl fmt::Debug for LocalKek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKek")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl KeyEncryptionKey for LocalKek {
    fn id(&self) -> &str {
        &self.id
    }

    fn wrap(&self, dek: &DataKey, aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let nonce = gcm::random_nonce();
        let sealed = gcm::seal(self.key.expose_secret(), &nonce, aad, dek.expose_secret())?;
        let mut out = Vec::with_capacity(LOCAL_WRAPPED_LEN);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<DataKey, CryptoError> {
        if wrapped.len() != LOCAL_WRAPPED_LEN {
            return Err(CryptoError::Malformed(
                "wrapped data key has the wrong length",
            ));
        }
        let (nonce, sealed) = wrapped.split_at(NONCE_LEN);
        let nonce: &[u8; NONCE_LEN] = nonce
            .try_into()
            .map_err(|_| CryptoError::Malformed("wrapped data key nonce"))?;
        let plain = gcm::open(self.key.expose_secret(), nonce, aad, sealed)?;
        DataKey::from_slice(&plain)
    }
}

/// Test doubles for key-encryption keys (STYLE 32): code under test never builds keys inline.
#[cfg(test)]
pub(crate) mod test_support {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A deterministic local KEK whose key is 32 copies of `fill`.
    pub(crate) fn fixed_kek(id: &str, fill: u8) -> Arc<dyn KeyEncryptionKey> {
        Arc::new(LocalKek::new(id, SecretBox::new(Box::new([fill; KEY_LEN]))).expect("valid id"))
    }

    /// A KEK that counts its wrap/unwrap calls and accepts any id (even invalid ones), to
    /// prove limits are checked before any key is touched.
    #[derive(Debug)]
    pub(crate) struct CountingKek {
        id: String,
        inner: LocalKek,
        pub(crate) wraps: AtomicUsize,
        pub(crate) unwraps: AtomicUsize,
    }

    impl CountingKek {
        pub(crate) fn new(id: &str) -> Self {
            let inner = LocalKek::generate("inner").expect("valid id");
            Self {
                id: id.into(),
                inner,
                wraps: AtomicUsize::new(0),
                unwraps: AtomicUsize::new(0),
            }
        }

        pub(crate) fn calls(&self) -> usize {
            self.wraps.load(Ordering::SeqCst) + self.unwraps.load(Ordering::SeqCst)
        }
    }

    impl KeyEncryptionKey for CountingKek {
        fn id(&self) -> &str {
            &self.id
        }
        fn wrap(&self, dek: &DataKey, aad: &[u8]) -> Result<Vec<u8>, CryptoError> {
            self.wraps.fetch_add(1, Ordering::SeqCst);
            self.inner.wrap(dek, aad)
        }
        fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<DataKey, CryptoError> {
            self.unwraps.fetch_add(1, Ordering::SeqCst);
            self.inner.unwrap(wrapped, aad)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s).expect("hex")
    }

    #[test]
    fn a_local_kek_unwraps_the_nist_cavp_aes_256_gcm_vector() {
        // Arrange: NIST CAVP gcmEncryptExtIV256.rsp, PTlen = 256, AADlen = 128, Count = 0,
        // laid out as this KEK's wrapped form (nonce ‖ ciphertext ‖ tag).
        let key: [u8; 32] =
            unhex("37ccdba1d929d6436c16bba5b5ff34deec88ed7df3d15d0f4ddf80c0c731ee1f")
                .try_into()
                .expect("32 bytes");
        let kek = LocalKek::new("nist", SecretBox::new(Box::new(key))).expect("kek");
        let wrapped = unhex(concat!(
            "5c1b21c8998ed6299006d3f9",
            "3b335f8b08d33ccdcad228a74700f1007542a4d1e7fc1ebe3f447fe71af29816",
            "1fbf49cc46f458bf6e88f6370975e6d4",
        ));
        let aad = unhex("22ed235946235a85a45bc5fad7140bfa");
        // Act
        let dek = kek.unwrap(&wrapped, &aad).expect("valid vector unwraps");
        // Assert
        assert_eq!(
            hex::encode(dek.expose_secret()),
            "ad4260e3cdc76bcc10c7b2c06b80b3be948258e5ef20c508a81f51e96a518388"
        );
        let mut tampered = wrapped.clone();
        tampered[20] ^= 0x01;
        assert!(matches!(
            kek.unwrap(&tampered, &aad),
            Err(CryptoError::Decrypt)
        ));
    }

    #[test]
    fn a_wrapped_data_key_round_trips_and_is_bound_to_its_aad_and_key() {
        let kek = LocalKek::generate("k1").expect("kek");
        let other = LocalKek::generate("k1").expect("kek");
        let dek = DataKey::generate();
        let wrapped = kek.wrap(&dek, b"row-1").expect("wrap");
        assert_eq!(wrapped.len(), LOCAL_WRAPPED_LEN);
        let back = kek.unwrap(&wrapped, b"row-1").expect("unwrap");
        assert_eq!(back.expose_secret(), dek.expose_secret());
        assert!(matches!(
            kek.unwrap(&wrapped, b"row-2"),
            Err(CryptoError::Decrypt)
        ));
        assert!(matches!(
            other.unwrap(&wrapped, b"row-1"),
            Err(CryptoError::Decrypt)
        ));
        assert!(matches!(
            kek.unwrap(&wrapped[1..], b"row-1"),
            Err(CryptoError::Malformed(_))
        ));
    }

    #[test]
    fn wrapping_the_same_data_key_twice_uses_fresh_nonces() {
        let kek = LocalKek::generate("k1").expect("kek");
        let dek = DataKey::generate();
        let a = kek.wrap(&dek, b"").expect("wrap");
        let b = kek.wrap(&dek, b"").expect("wrap");
        assert_ne!(a[..NONCE_LEN], b[..NONCE_LEN]);
    }

    #[test]
    fn debug_output_shows_key_ids_and_never_key_bytes() {
        let kek = LocalKek::new("k7", SecretBox::new(Box::new([0xAB; 32]))).expect("kek");
        let dek = DataKey::from_slice(&[0xCD; 32]).expect("dek");
        let text = format!("{kek:?} {dek:?} {kek:#?} {dek:#?}");
        assert!(text.contains("k7"));
        for needle in ["ab", "AB", "171", "cd", "CD", "205"] {
            assert!(!text.contains(needle), "{needle} found in {text}");
        }
    }

    #[test]
    fn key_ids_must_be_short_printable_ascii() {
        for bad in ["", " ", "k 1", "ключ", "k\n1", &"x".repeat(256)] {
            assert!(LocalKek::generate(bad).is_err(), "{bad:?} accepted");
        }
        assert!(LocalKek::generate("x".repeat(255)).is_ok());
        assert!(LocalKek::generate("arn:aws:kms:eu-west-1:1:key/abc").is_ok());
    }

    #[test]
    fn a_data_key_must_be_exactly_32_bytes() {
        assert!(DataKey::from_slice(&[0; 31]).is_err());
        assert!(DataKey::from_slice(&[0; 33]).is_err());
        assert!(DataKey::from_slice(&[0; 32]).is_ok());
    }
}
