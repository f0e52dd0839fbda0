//! The node CA and the control-plane id of replicas that share one database: the first
//! replica to start creates them and stores them (the CA key sealed with the provisioners'
//! shared sealing key); every replica, that one included, uses what was stored first. So
//! an agent enrolls with whichever replica it reaches, against the fingerprint its join
//! token pins, and every replica labels servers with the same id.
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};

use super::ca::{CaError, ControlPlaneCa};
use crate::model::ports::{SharedStateStore, StoreError};
use crate::model::provision::{SealError, SealingKey};

/// Where the CA is kept.
const NODE_CA: &str = "node-ca";
/// Where the control-plane id is kept.
const CONTROL_PLANE_ID: &str = "control-plane-id";

/// Why the shared CA could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SharedCaError {
    /// The database could not be read or written.
    #[error("the shared database: {0}")]
    Store(#[from] StoreError),
    /// The stored CA is not in the expected form.
    #[error("the node CA in the shared database is malformed: {0}")]
    Malformed(String),
    /// The stored CA key does not open with this replica's sealing key.
    #[error(
        "the node CA in the shared database does not open with this replica's sealing key: \
         every provisioner replica needs the same --sealing-key-file ({0})"
    )]
    Seal(#[from] SealError),
    /// Generating or loading the certificate failed.
    #[error(transparent)]
    Ca(#[from] CaError),
}

#[derive(Serialize, Deserialize)]
struct StoredCa {
    cert_pem: String,
    /// The CA's private key (PEM), sealed under the name `node-ca`, base64.
    key_sealed: String,
}

/// The replicas' node CA, and whether this call created it.
pub async fn node_ca(
    store: &dyn SharedStateStore,
    key: &SealingKey,
) -> Result<(ControlPlaneCa, bool), SharedCaError> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (cert_pem, key_pem) = ControlPlaneCa::generate()?;
    let key_pem = SecretString::from(key_pem);
    let ours = serde_json::to_vec(&StoredCa {
        cert_pem: cert_pem.clone(),
        key_sealed: b64.encode(key.seal_named(NODE_CA, &key_pem)?),
    })
    .map_err(|e| SharedCaError::Malformed(e.to_string()))?;
    let stored = store.shared_value(NODE_CA, &ours).await?;
    let created = stored == ours;
    let stored: StoredCa =
        serde_json::from_slice(&stored).map_err(|e| SharedCaError::Malformed(e.to_string()))?;
    let sealed = b64
        .decode(stored.key_sealed)
        .map_err(|e| SharedCaError::Malformed(e.to_string()))?;
    let key_pem = key.open_named(NODE_CA, &sealed)?;
    let ca = ControlPlaneCa::from_pem(&stored.cert_pem, key_pem.expose_secret())?;
    Ok((ca, created))
}

/// A fresh control-plane id: `cp-` and 12 hex digits.
pub fn new_control_plane_id() -> String {
    format!("cp-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// The most characters of a control-plane id: a DigitalOcean tag holds 255, of which
/// `levelrail-booting-` takes 18.
const MAX_CONTROL_PLANE_ID: usize = 237;

/// What is wrong with `id` as a control-plane id, if anything. Every server is labelled
/// with it at every provider. Hetzner's and GCP's labels take any id (one their rules
/// refuse is rewritten, with a digest that keeps distinct ids distinct), AWS's and Azure's
/// tags take it as it is; DigitalOcean's tags alone refuse some: they hold letters, digits,
/// `:`, `-` and `_`, 255 at most, prefix included. A fresh id (`cp-` and 12 hex digits) is
/// one.
pub fn control_plane_id_problem(id: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_');
    let rule = "a control-plane id is 1-237 letters, digits, ':', '-' and '_' (DigitalOcean \
                tags every droplet with it)";
    let length = id.chars().count();
    let problem = if length == 0 {
        "it is empty".to_owned()
    } else if length > MAX_CONTROL_PLANE_ID {
        format!("it has {length} characters")
    } else if let Some((at, c)) = id.chars().enumerate().find(|(_, c)| !allowed(*c)) {
        format!("character {} is {c:?}", at + 1)
    } else {
        return None;
    };
    Some(format!("{rule}: {problem}"))
}

/// The replicas' control-plane id (`cp-…`), the first replica's.
pub async fn control_plane_id(store: &dyn SharedStateStore) -> Result<String, StoreError> {
    let ours = new_control_plane_id();
    let stored = store
        .shared_value(CONTROL_PLANE_ID, ours.as_bytes())
        .await?;
    let id = String::from_utf8(stored)
        .map_err(|_| StoreError::Corrupt("the shared control-plane id is not text".into()))?;
    match control_plane_id_problem(&id) {
        None => Ok(id),
        Some(problem) => Err(StoreError::Corrupt(format!(
            "the shared control-plane id (shared_state '{CONTROL_PLANE_ID}'): {problem}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;

    /// The first writer wins, as in the SQL store.
    #[derive(Debug, Default)]
    struct MemoryStore(Mutex<HashMap<String, Vec<u8>>>);

    impl MemoryStore {
        fn new() -> Self {
            Self::default()
        }
    }

    #[async_trait::async_trait]
    impl SharedStateStore for MemoryStore {
        async fn shared_value(&self, name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
            let mut map = self.0.lock().unwrap();
            Ok(map
                .entry(name.to_owned())
                .or_insert_with(|| value.to_vec())
                .clone())
        }
    }

    #[tokio::test]
    async fn every_replica_gets_the_first_ones_ca_and_id() {
        let store = MemoryStore::new();
        let key = SealingKey::generate();
        let twin = key.clone();
        let (first, created) = node_ca(&store, &key).await.expect("first");
        let (second, again) = node_ca(&store, &twin).await.expect("second");
        assert!(created && !again);
        assert_eq!(first.fingerprint(), second.fingerprint());
        let id = control_plane_id(&store).await.expect("id");
        assert!(id.starts_with("cp-"));
        assert_eq!(control_plane_id(&store).await.expect("again"), id);
    }

    #[test]
    fn a_control_plane_id_is_refused_only_where_a_provider_would_refuse_it() {
        for _ in 0..32 {
            let fresh = new_control_plane_id();
            assert_eq!(control_plane_id_problem(&fresh), None, "{fresh}");
        }
        let (longest, too_long) = ("x".repeat(237), "x".repeat(238));
        for ok in [
            "cp-0123abcdef45",
            "prod_eu-1",
            "cp-1:eu",
            "-A_",
            longest.as_str(),
        ] {
            assert_eq!(control_plane_id_problem(ok), None, "{ok}");
        }
        let cases = [
            ("", "it is empty"),
            (too_long.as_str(), "it has 238 characters"),
            ("prod.eu", "character 5 is '.'"),
            ("cp 1", "character 3 is ' '"),
            ("cp/é", "character 3 is '/'"),
        ];
        for (bad, why) in cases {
            let problem = control_plane_id_problem(bad).expect(bad);
            assert!(
                problem.starts_with("a control-plane id is 1-237 letters") && problem.contains(why),
                "{bad:?}: {problem}"
            );
        }
    }

    #[tokio::test]
    async fn a_shared_control_plane_id_that_breaks_the_rule_is_refused_by_name() {
        let store = MemoryStore::new();
        store
            .shared_value(CONTROL_PLANE_ID, b"prod.eu")
            .await
            .expect("stored");
        let e = control_plane_id(&store).await.expect_err("refused");
        assert!(
            matches!(&e, StoreError::Corrupt(m) if m.contains("control-plane-id") && m.contains("'.'")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn a_replica_with_another_sealing_key_is_refused_by_name() {
        let store = MemoryStore::new();
        node_ca(&store, &SealingKey::generate())
            .await
            .expect("first");
        let e = node_ca(&store, &SealingKey::generate())
            .await
            .expect_err("another key");
        assert!(matches!(e, SharedCaError::Seal(_)));
        assert!(e.to_string().contains("--sealing-key-file"), "{e}");
    }
}
