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

/// The MD5 fingerprint of an OpenSSH public key line, as Hetzner and DigitalOcean show and
/// filter by it (`ssh-keygen -l -E md5`: colon-separated hex of the decoded key blob), or
/// `None` when the line is not a public key.
pub(crate) fn md5_fingerprint(public_key: &str) -> Option<String> {
    use md5::Digest as _;
    let mut parts = public_key.split_whitespace();
    let kind = parts.next()?;
    let blob = base64::engine::general_purpose::STANDARD
        .decode(parts.next()?)
        .ok()?;
    // The blob starts with the key type as an SSH string.
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    if blob.get(4..4 + len)? != kind.as_bytes() {
        return None;
    }
    let digest = md5::Md5::digest(&blob);
    Some(
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_fingerprints_match_ssh_keygen() {
        // `ssh-keygen -l -E md5` of this key prints the fingerprint below.
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIITWEWi0DsMXOouTeqIP/W8lGSxbPv3Q7056i8Edls7y op@host";
        assert_eq!(
            md5_fingerprint(key).as_deref(),
            Some("6a:79:73:65:7e:b3:cc:48:a9:b9:8a:fc:69:91:c9:e1")
        );
        assert!(md5_fingerprint("ssh-ed25519 notbase64!").is_none());
        let mismatched = key.replacen("ssh-ed25519", "ssh-rsa", 1);
        assert!(md5_fingerprint(&mismatched).is_none(), "type mismatch");
    }

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
