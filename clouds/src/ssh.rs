//! SSH keys a provider requires at create time although no one logs in with them.
use base64::Engine as _;

use crate::{ErrorKind, ProviderError, ProviderId};

/// A fresh Ed25519 public key in OpenSSH form, for a cloud that needs a key on every
/// server (Hetzner and DigitalOcean otherwise email a root password); the private key is
/// dropped at once, so the key locks the root login rather than opening it.
pub(crate) fn lock_key(provider: ProviderId) -> Result<String, ProviderError> {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
        .map_err(|e| ProviderError::new(provider, ErrorKind::Other, "keygen", &e.to_string()))?;
    let mut blob = Vec::with_capacity(51);
    for part in [b"ssh-ed25519".as_slice(), pair.public_key_raw()] {
        blob.extend_from_slice(&(part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(blob);
    Ok(format!("ssh-ed25519 {b64} levelrail-no-login"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_key_is_a_well_formed_ed25519_public_key_and_fresh_every_time() {
        let k = lock_key(ProviderId::Hetzner).expect("key");
        let mut parts = k.split_whitespace();
        assert_eq!(parts.next(), Some("ssh-ed25519"));
        let blob = base64::engine::general_purpose::STANDARD
            .decode(parts.next().expect("material"))
            .expect("base64");
        assert_eq!(blob.len(), 4 + 11 + 4 + 32);
        assert_eq!(&blob[4..15], b"ssh-ed25519");
        assert_ne!(lock_key(ProviderId::DigitalOcean).expect("key"), k);
    }
}
