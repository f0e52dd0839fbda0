//! The keyring: key-encryption keys with their rotation state (exactly one primary), built
//! from a list, from the keyring file, or from `LEVELRAIL_MASTER_KEY`.
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use secrecy::{ExposeSecret as _, SecretBox};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::CryptoError;
use super::kek::{DATA_KEY_LEN, KeyEncryptionKey, LocalKek, is_valid_kek_id};

/// The id every key from `LEVELRAIL_MASTER_KEY` had before keys from the environment were
/// told apart ([`env_key_id`]): an envelope naming it opens with whichever key from the
/// environment sealed it, and is re-wrapped under the primary's own id at start.
pub const ENV_KEY_ID: &str = "env";
/// The start of every [`env_key_id`].
const ENV_KEY_PREFIX: &str = "env-";

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

    /// The keys that may open an envelope naming `id`: the key of that id, or, for the
    /// [`ENV_KEY_ID`] of earlier releases, every key from the environment.
    pub fn openers<'a>(
        &'a self,
        id: &'a str,
    ) -> impl Iterator<Item = &'a Arc<dyn KeyEncryptionKey>> + 'a {
        self.keys.iter().map(|(k, _)| k).filter(move |k| {
            k.id() == id || (id == ENV_KEY_ID && k.id().starts_with(ENV_KEY_PREFIX))
        })
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

/// A keyring from the environment: the key of `LEVELRAIL_MASTER_KEY` as primary and, while
/// a rotation rolls out, the key it replaces (`LEVELRAIL_MASTER_KEY_PREVIOUS`) as retiring,
/// to open what it sealed until every data key is re-wrapped. Each is the base64 (standard,
/// padded) encoding of 32 bytes; surrounding whitespace is ignored; error texts never echo
/// a value. Each key's id is [`env_key_id`] of it, so an envelope names the key that sealed
/// it and a later rotation can tell them apart.
pub fn keyring_from_env_keys(
    current: &str,
    previous: Option<&str>,
) -> Result<Keyring, CryptoError> {
    let decode = |b64: &str, var: &str| {
        decode_key(b64.trim()).ok_or_else(|| {
            CryptoError::Keyring(format!(
                "{var} must be the base64 encoding of exactly 32 bytes \
                 (for example the output of `openssl rand -base64 32`)"
            ))
        })
    };
    let key = decode(current, "LEVELRAIL_MASTER_KEY")?;
    let mut keys: Vec<(Arc<dyn KeyEncryptionKey>, KeyState)> = Vec::with_capacity(2);
    let id = env_key_id(key.expose_secret());
    keys.push((Arc::new(LocalKek::new(&id, key)?), KeyState::Primary));
    if let Some(previous) = previous {
        let key = decode(previous, "LEVELRAIL_MASTER_KEY_PREVIOUS")?;
        let previous_id = env_key_id(key.expose_secret());
        if previous_id == id {
            return Err(CryptoError::Keyring(
                "LEVELRAIL_MASTER_KEY_PREVIOUS is the same key as LEVELRAIL_MASTER_KEY: give \
                 the key being replaced, or leave it unset"
                    .into(),
            ));
        }
        keys.push((
            Arc::new(LocalKek::new(&previous_id, key)?),
            KeyState::Retiring,
        ));
    }
    Keyring::new(keys)
}

/// The id of a key from the environment: `env-` and the first 16 hex digits of a SHA-256
/// of the key under a domain label (a one-way fingerprint: it tells keys apart, and says
/// nothing of the key).
pub fn env_key_id(key: &[u8; DATA_KEY_LEN]) -> String {
    let digest = Sha256::new()
        .chain_update(b"levelrail master key id v1\0")
        .chain_update(key)
        .finalize();
    format!("{ENV_KEY_PREFIX}{}", hex::encode(&digest[..8]))
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
    fn env_keys_are_named_by_fingerprint_and_the_previous_one_is_retiring() {
        let (a, b) = (STANDARD.encode([9u8; 32]), STANDARD.encode([10u8; 32]));
        let ring = keyring_from_env_keys(&format!("  {a}\n"), None).expect("ok");
        let id_a = env_key_id(&[9u8; 32]);
        assert!(id_a.starts_with("env-") && id_a.len() == 20, "{id_a}");
        assert_eq!(ring.key_ids(), std::slice::from_ref(&id_a));
        assert_eq!(ring.primary().id(), id_a);
        assert!(!ring.has_pending_rotation());

        let ring = keyring_from_env_keys(&b, Some(&a)).expect("ok");
        let id_b = env_key_id(&[10u8; 32]);
        assert_ne!(id_a, id_b);
        assert_eq!(ring.primary().id(), id_b);
        assert_eq!(ring.retiring_ids(), std::slice::from_ref(&id_a));
        // Envelopes of earlier releases name `env`: either key may open them.
        let openers: Vec<_> = ring
            .openers(ENV_KEY_ID)
            .map(|k| k.id().to_owned())
            .collect();
        assert_eq!(openers, [id_b.clone(), id_a.clone()]);
        let openers: Vec<_> = ring.openers(&id_a).map(|k| k.id().to_owned()).collect();
        assert_eq!(openers, [id_a]);

        let same = keyring_from_env_keys(&a, Some(&a)).unwrap_err();
        assert!(
            same.to_string().contains("LEVELRAIL_MASTER_KEY_PREVIOUS"),
            "{same}"
        );
    }

    #[test]
    fn a_bad_env_key_is_refused_without_echoing_it() {
        let short = STANDARD.encode([7u8; 31]);
        let long = STANDARD.encode([7u8; 33]);
        let not_b64 = "s3cr3t-value-that-is-not-base64!!".to_owned();
        for value in [short, long, not_b64, String::new()] {
            let err = keyring_from_env_keys(&value, None).unwrap_err();
            assert!(err.to_string().contains("LEVELRAIL_MASTER_KEY "), "{err}");
            let good = STANDARD.encode([1u8; 32]);
            let previous = keyring_from_env_keys(&good, Some(&value)).unwrap_err();
            assert!(
                previous
                    .to_string()
                    .contains("LEVELRAIL_MASTER_KEY_PREVIOUS")
            );
            assert!(value.is_empty() || !previous.to_string().contains(&value[..8]));
            let text = format!("{err} {err:?}");
            assert!(matches!(err, CryptoError::Keyring(_)));
            assert!(value.is_empty() || !text.contains(&value[..8]), "{text}");
        }
    }
}
