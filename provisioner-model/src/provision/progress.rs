//! The progress credential of a provision: what a booting node's cloud-init presents to the
//! progress endpoint (`Authorization: Bearer LRP1.<provision id>.<secret>`), so the join
//! token has exactly one use (Enroll).
//!
//! The secret is HMAC-SHA256 of the provision id under the control plane's sealing key, so
//! it is never stored and is re-derived whenever the user-data is rendered again. It is
//! bound to its one provision (another provision's id does not verify), and it is valid
//! only while that provision is in flight: the endpoint refuses it once the provision is
//! `ready` or terminal, so reaching `ready` revokes it.
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::SecretString;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

use super::{ProvisionId, SealingKey};

/// The version prefix of every progress credential.
pub const PROGRESS_CREDENTIAL_PREFIX: &str = "LRP1";
/// Domain separation: this MAC never equals one made for another purpose.
const CONTEXT: &[u8] = b"levelrail/provision-progress-credential/v1:";
const BLOCK: usize = 64;

/// A presented credential, parsed (not yet verified). `Debug` hides the secret.
pub struct ProgressCredential {
    /// The provision it claims to belong to.
    pub provision_id: ProvisionId,
    mac: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for ProgressCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressCredential")
            .field("provision_id", &self.provision_id)
            .finish_non_exhaustive()
    }
}

impl ProgressCredential {
    /// Parses `LRP1.<provision id>.<base64url secret>`; `None` for anything else (the
    /// caller answers "unauthenticated" without saying why).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('.');
        let (Some(PROGRESS_CREDENTIAL_PREFIX), Some(id), Some(secret), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let provision_id = ProvisionId::parse(id).ok()?;
        let mac = Zeroizing::new(URL_SAFE_NO_PAD.decode(secret).ok()?);
        (mac.len() == 32).then_some(ProgressCredential { provision_id, mac })
    }

    /// Whether the secret is the one `key` derives for the claimed provision (constant
    /// time).
    pub fn verifies_under(&self, key: &SealingKey) -> bool {
        let expected = key.progress_mac(&self.provision_id);
        bool::from(expected.as_slice().ct_eq(self.mac.as_slice()))
    }
}

impl SealingKey {
    /// The progress credential of provision `id`: the same string every time it is asked
    /// for, different for every provision and every key.
    pub fn progress_credential(&self, id: &ProvisionId) -> SecretString {
        let mac = self.progress_mac(id);
        SecretString::from(format!(
            "{PROGRESS_CREDENTIAL_PREFIX}.{id}.{}",
            URL_SAFE_NO_PAD.encode(mac.as_slice())
        ))
    }

    /// HMAC-SHA256 (RFC 2104) of the context and the id under this key.
    fn progress_mac(&self, id: &ProvisionId) -> Zeroizing<[u8; 32]> {
        let key = self.expose_bytes();
        let mut ipad = Zeroizing::new([0x36u8; BLOCK]);
        let mut opad = Zeroizing::new([0x5cu8; BLOCK]);
        for (i, byte) in key.iter().enumerate() {
            ipad[i] ^= byte;
            opad[i] ^= byte;
        }
        let inner = Sha256::new()
            .chain_update(ipad.as_slice())
            .chain_update(CONTEXT)
            .chain_update(id.as_str().as_bytes())
            .finalize();
        let outer = Sha256::new()
            .chain_update(opad.as_slice())
            .chain_update(inner)
            .finalize();
        Zeroizing::new(outer.into())
    }
}

/// `true` when `text` looks like a progress credential (and so is not a join token).
pub fn is_progress_credential(text: &str) -> bool {
    text.trim()
        .strip_prefix(PROGRESS_CREDENTIAL_PREFIX)
        .is_some_and(|rest| rest.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret as _;

    #[test]
    fn a_credential_verifies_for_its_own_provision_only() {
        let key = SealingKey::generate();
        let (a, b) = (ProvisionId::generate(), ProvisionId::generate());
        let cred_a = key.progress_credential(&a);
        assert_eq!(
            cred_a.expose_secret(),
            key.progress_credential(&a).expose_secret(),
            "derived, so rendering again gives the same credential"
        );
        let parsed = ProgressCredential::parse(cred_a.expose_secret()).unwrap();
        assert_eq!(parsed.provision_id, a);
        assert!(parsed.verifies_under(&key));
        assert!(!parsed.verifies_under(&SealingKey::generate()));
        // A's secret with B's id does not verify.
        let secret = cred_a.expose_secret().rsplit('.').next().unwrap();
        let forged = ProgressCredential::parse(&format!("LRP1.{b}.{secret}")).unwrap();
        assert!(!forged.verifies_under(&key));
        assert!(!format!("{parsed:?}").contains(secret));
    }

    #[test]
    fn anything_but_the_exact_shape_is_not_a_credential() {
        let key = SealingKey::generate();
        let id = ProvisionId::generate();
        let good = key.progress_credential(&id);
        let good = good.expose_secret();
        for bad in [
            String::new(),
            good.replacen("LRP1", "LRP2", 1),
            format!("{good}.x"),
            good.replacen(id.as_str(), "npv_zz", 1),
            format!("{}AA", good),
            "LR1.ab.njt_1.secret".to_owned(),
        ] {
            assert!(ProgressCredential::parse(&bad).is_none(), "{bad}");
        }
        assert!(is_progress_credential(good));
        assert!(!is_progress_credential("LR1.00.njt_1.x"));
    }
}
