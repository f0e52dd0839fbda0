//! The one AES-256-GCM primitive every key in this module goes through, with nonces drawn
//! from the OS and plaintext only in zeroizing buffers.
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use rand::RngCore;
use rand::rngs::OsRng;
use zeroize::Zeroizing;

use super::CryptoError;

/// AES-GCM nonce length: 96 bits, the only size GCM handles without an extra GHASH pass.
pub(crate) const NONCE_LEN: usize = 12;
/// AES-GCM tag length.
pub(crate) const TAG_LEN: usize = 16;
/// AES-256 key length.
pub(crate) const KEY_LEN: usize = 32;

/// A fresh random nonce. Panics only if the OS random source fails, which is not
/// recoverable: carrying on would mean reusing or predicting nonces.
pub(crate) fn random_nonce() -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    nonce
}

fn cipher(key: &[u8; KEY_LEN]) -> Aes256Gcm {
    // `from_slice` panics only on a length mismatch; the array type pins it to 32 bytes.
    // Borrowing (not copying) the key avoids an extra unzeroized copy on the stack.
    Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key))
}

/// Encrypts `plaintext` and returns ciphertext ‖ tag.
pub(crate) fn seal(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    // Sized up front so the buffer never reallocates and leaves a plaintext copy behind;
    // the plaintext is overwritten in place by the ciphertext.
    let mut buf = Vec::with_capacity(plaintext.len() + TAG_LEN);
    buf.extend_from_slice(plaintext);
    cipher(key)
        .encrypt_in_place(Nonce::from_slice(nonce), aad, &mut buf)
        // Only fails for inputs over GCM's 64 GiB limit, far above our size limits.
        .map_err(|_| CryptoError::Malformed("plaintext too large for AES-GCM"))?;
    Ok(buf)
}

/// Decrypts ciphertext ‖ tag. The tag is verified before anything is returned; on failure
/// the working buffer is zeroized and the error carries no data.
pub(crate) fn open(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    ciphertext_and_tag: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    if ciphertext_and_tag.len() < TAG_LEN {
        return Err(CryptoError::Malformed("ciphertext shorter than the tag"));
    }
    let mut buf = Zeroizing::new(Vec::with_capacity(ciphertext_and_tag.len()));
    buf.extend_from_slice(ciphertext_and_tag);
    cipher(key)
        .decrypt_in_place(Nonce::from_slice(nonce), aad, &mut *buf)
        .map_err(|_| CryptoError::Decrypt)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s).expect("test vector is hex")
    }

    fn arr<const N: usize>(s: &str) -> [u8; N] {
        unhex(s).try_into().expect("test vector length")
    }

    // NIST CAVP `gcmEncryptExtIV256.rsp`, Keylen = 256, IVlen = 96, PTlen = 256,
    // AADlen = 128, Taglen = 128, Count = 0 (also in RustCrypto aes-gcm `tests/aes256gcm.rs`).
    const KEY: &str = "37ccdba1d929d6436c16bba5b5ff34deec88ed7df3d15d0f4ddf80c0c731ee1f";
    const IV: &str = "5c1b21c8998ed6299006d3f9";
    const PT: &str = "ad4260e3cdc76bcc10c7b2c06b80b3be948258e5ef20c508a81f51e96a518388";
    const AAD: &str = "22ed235946235a85a45bc5fad7140bfa";
    const CT: &str = "3b335f8b08d33ccdcad228a74700f1007542a4d1e7fc1ebe3f447fe71af29816";
    const TAG: &str = "1fbf49cc46f458bf6e88f6370975e6d4";

    #[test]
    fn the_primitive_reproduces_the_nist_cavp_aes_256_gcm_vector() {
        // Arrange
        let (key, iv) = (arr::<32>(KEY), arr::<12>(IV));
        // Act
        let sealed = seal(&key, &iv, &unhex(AAD), &unhex(PT)).expect("seal");
        let opened = open(&key, &iv, &unhex(AAD), &sealed).expect("open");
        // Assert
        assert_eq!(hex::encode(&sealed), format!("{CT}{TAG}"));
        assert_eq!(&opened[..], &unhex(PT)[..]);
    }

    #[test]
    fn the_primitive_reproduces_the_nist_cavp_empty_plaintext_vector() {
        // gcmEncryptExtIV256.rsp, PTlen = 0, AADlen = 0, Count = 0.
        let key = arr::<32>("b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4");
        let iv = arr::<12>("516c33929df5a3284ff463d7");
        let sealed = seal(&key, &iv, b"", b"").expect("seal");
        assert_eq!(hex::encode(&sealed), "bdc1ac884d332457a1d2664f168c76f0");
    }

    #[test]
    fn the_primitive_rejects_the_vector_with_a_modified_tag_aad_or_nonce() {
        // Wycheproof-style invalid cases derived from the valid NIST vector.
        let (key, iv, aad) = (arr::<32>(KEY), arr::<12>(IV), unhex(AAD));
        let good = unhex(&format!("{CT}{TAG}"));
        let mut bad_tag = good.clone();
        *bad_tag.last_mut().expect("non-empty") ^= 0x80;
        let mut bad_iv = iv;
        bad_iv[0] ^= 1;
        assert!(matches!(
            open(&key, &iv, &aad, &bad_tag),
            Err(CryptoError::Decrypt)
        ));
        assert!(matches!(
            open(&key, &iv, b"", &good),
            Err(CryptoError::Decrypt)
        ));
        assert!(matches!(
            open(&key, &bad_iv, &aad, &good),
            Err(CryptoError::Decrypt)
        ));
        assert!(matches!(
            open(&key, &iv, &aad, &good[..15]),
            Err(CryptoError::Malformed(_))
        ));
    }

    #[test]
    fn random_nonces_are_twelve_bytes_and_differ() {
        let (a, b) = (random_nonce(), random_nonce());
        assert_eq!(a.len(), 12);
        assert_ne!(a, b);
    }
}
