//! The keyring: key-encryption keys with their rotation state (exactly one primary), built
//! from a list, from the keyring file, or from `LEVELRAIL_MASTER_KEY`.
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use secrecy::SecretBox;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::CryptoError;
use super::kek::{DATA_KEY_LEN, KeyEncryptionKey, LocalKek, is_valid_kek_id};

/// Id of the single key built from `LEVELRAIL_MASTER_KEY`.
pub const ENV_KEY_ID: &str = "env";

/// Where a key stands in the add → promote → re-wrap → retire rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    /// Wraps every new data key; exactly one per keyring.
    Primary,
    /// Added and able to open envelopes, waiting to be promoted.
    Active,
    /// A former primary: opens envelopes until every row is re-wrapped, then is retired.
    Retiring,
}

/// Key-encryption keys by id, each with its [`KeyState`]. Cheap to clone; `Debug` prints
/// ids and states only.
#[derive(Clone)]
pub struct Keyring {
    primary: Arc<dyn KeyEncryptionKey>,
    keys: Vec<(Arc<dyn KeyEncryptionKey>, KeyState)>,
}

impl Keyring {
    /// A keyring over `keys`. Fails unless there is exactly one primary, every id is valid
    /// (see [`is_valid_kek_id`]) and ids are unique.
    pub fn new(keys: Vec<(Arc<dyn KeyEncryptionKey>, KeyState)>) -> Result<Self, CryptoError> {
        let mut seen = HashSet::new();
        for (kek, _) in &keys {
            if !is_valid_kek_id(kek.id()) {
                return Err(CryptoError::Keyring("a key has an invalid id".into()));
            }
            if !seen.insert(kek.id()) {
                return Err(CryptoError::Keyring(format!(
                    "key id {:?} appears twice",
                    kek.id()
                )));
            }
        }
        let mut primaries = keys.iter().filter(|(_, s)| *s == KeyState::Primary);
        let primary = match (primaries.next(), primaries.next()) {
            (Some((kek, _)), None) => kek.clone(),
            (None, _) => return Err(CryptoError::Keyring("no primary key".into())),
            (Some(_), Some(_)) => {
                return Err(CryptoError::Keyring(
                    "more than one primary key; exactly one is required".into(),
                ));
            }
        };
        Ok(Self { primary, keys })
    }

    /// The key that wraps new data keys.
    pub fn primary(&self) -> &Arc<dyn KeyEncryptionKey> {
        &self.primary
    }

    /// The key named `id`, in any state.
    pub fn get(&self, id: &str) -> Option<&Arc<dyn KeyEncryptionKey>> {
        self.keys.iter().find(|(k, _)| k.id() == id).map(|(k, _)| k)
    }

    /// The state of the key named `id`.
    pub fn state_of(&self, id: &str) -> Option<KeyState> {
        self.keys
            .iter()
            .find(|(k, _)| k.id() == id)
            .map(|(_, s)| *s)
    }

    /// Every key id, in keyring order.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys.iter().map(|(k, _)| k.id().to_owned()).collect()
    }

    /// Ids of keys added but not yet promoted.
    pub fn active_ids(&self) -> Vec<String> {
        self.ids_in(KeyState::Active)
    }

    /// Ids of former primaries still needed by rows not yet re-wrapped.
    pub fn retiring_ids(&self) -> Vec<String> {
        self.ids_in(KeyState::Retiring)
    }

    /// Whether a rotation is half done: a key waits to be promoted or to be retired.
    pub fn has_pending_rotation(&self) -> bool {
        self.keys.iter().any(|(_, s)| *s != KeyState::Primary)
    }

    fn ids_in(&self, state: KeyState) -> Vec<String> {
        self.keys
            .iter()
            .filter(|(_, s)| *s == state)
            .map(|(k, _)| k.id().to_owned())
            .collect()
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.keys.iter().map(|(k, s)| (k.id(), s)))
            .finish()
    }
}

/// A keyring of one primary key with id [`ENV_KEY_ID`], from the base64 (standard, padded)
/// encoding of 32 bytes, as given in `LEVELRAIL_MASTER_KEY`. Surrounding whitespace is
/// ignored; error texts never echo the value.
pub fn keyring_from_env_key(b64: &str) -> Result<Keyring, CryptoError> {
    let key = decode_key(b64.trim()).ok_or_else(|| {
        CryptoError::Keyring(
            "LEVELRAIL_MASTER_KEY must be the base64 encoding of exactly 32 bytes \
             (for example the output of `openssl rand -base64 32`)"
                .into(),
        )
    })?;
    let kek: Arc<dyn KeyEncryptionKey> = Arc::new(LocalKek::new(ENV_KEY_ID, key)?);
    Keyring::new(vec![(kek, KeyState::Primary)])
}

/// Decodes standard base64 of exactly 32 bytes; every intermediate buffer is zeroized.
/// `None` says nothing about the input on purpose.
pub(crate) fn decode_key(b64: &str) -> Option<SecretBox<[u8; DATA_KEY_LEN]>> {
    // Capacity covers the decoder's estimate so the buffer never reallocates.
    let mut buf = Zeroizing::new(Vec::with_capacity(b64.len() + 3));
    STANDARD.decode_vec(b64, &mut buf).ok()?;
    if buf.len() != DATA_KEY_LEN {
        return None;
    }
    Some(SecretBox::init_with_mut(|k: &mut [u8; DATA_KEY_LEN]| {
        k.copy_from_slice(&buf)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::kek::test_support::fixed_kek;

    fn ring(keys: &[(&str, KeyState)]) -> Result<Keyring, CryptoError> {
        Keyring::new(
            keys.iter()
                .enumerate()
                .map(|(i, (id, s))| (fixed_kek(id, i as u8), *s))
                .collect(),
        )
    }

    #[test]
    fn a_keyring_needs_exactly_one_primary() {
        use KeyState::*;
        assert!(matches!(ring(&[]), Err(CryptoError::Keyring(_))));
        assert!(matches!(
            ring(&[("k1", Active)]),
            Err(CryptoError::Keyring(_))
        ));
        assert!(matches!(
            ring(&[("k1", Primary), ("k2", Primary)]),
            Err(CryptoError::Keyring(_))
        ));
        assert!(ring(&[("k1", Retiring), ("k2", Primary), ("k3", Active)]).is_ok());
    }

    #[test]
    fn a_keyring_refuses_duplicate_ids() {
        let err = ring(&[("k1", KeyState::Primary), ("k1", KeyState::Active)]).unwrap_err();
        assert!(err.to_string().contains("twice"));
    }

    #[test]
    fn a_keyring_reports_states_and_rotation_progress() {
        use KeyState::*;
        let r = ring(&[("k1", Retiring), ("k2", Primary), ("k3", Active)]).expect("ring");
        assert_eq!(r.primary().id(), "k2");
        assert_eq!(r.get("k3").map(|k| k.id()), Some("k3"));
        assert!(r.get("k4").is_none());
        assert_eq!(r.state_of("k1"), Some(Retiring));
        assert_eq!(r.state_of("k4"), None);
        assert_eq!(r.key_ids(), ["k1", "k2", "k3"]);
        assert_eq!(r.retiring_ids(), ["k1"]);
        assert_eq!(r.active_ids(), ["k3"]);
        assert!(r.has_pending_rotation());
        assert!(
            !ring(&[("k1", Primary)])
                .expect("ring")
                .has_pending_rotation()
        );
        assert_eq!(
            format!("{r:?}"),
            r#"{"k1": Retiring, "k2": Primary, "k3": Active}"#
        );
    }

    #[test]
    fn key_states_serialize_in_snake_case() {
        let json =
            serde_json::to_string(&[KeyState::Primary, KeyState::Active, KeyState::Retiring]);
        assert_eq!(json.expect("json"), r#"["primary","active","retiring"]"#);
    }

    #[test]
    fn an_env_key_gives_a_single_primary_named_env() {
        let ring =
            keyring_from_env_key(&format!("  {}\n", STANDARD.encode([9u8; 32]))).expect("ok");
        assert_eq!(ring.key_ids(), [ENV_KEY_ID]);
        assert_eq!(ring.primary().id(), ENV_KEY_ID);
    }

    #[test]
    fn a_bad_env_key_is_refused_without_echoing_it() {
        let short = STANDARD.encode([7u8; 31]);
        let long = STANDARD.encode([7u8; 33]);
        let not_b64 = "s3cr3t-value-that-is-not-base64!!".to_owned();
        for value in [short, long, not_b64, String::new()] {
            let err = keyring_from_env_key(&value).unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(matches!(err, CryptoError::Keyring(_)));
            assert!(value.is_empty() || !text.contains(&value[..8]), "{text}");
        }
    }
}
