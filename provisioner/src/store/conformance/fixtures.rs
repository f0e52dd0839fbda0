//! Builders and checks shared by the conformance behaviours, and the canary tokens used by
//! each backend's "a raw dump holds no secret" test.
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore as _;
use secrecy::ExposeSecret as _;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

use crate::model::ports::NodeStore;
use crate::model::{
    JoinTokenId, MintedJoinToken, NodeId, NodeName, ParsedJoinToken, Role, WorkloadKind,
};
use crate::model::{JoinTokenRecord, NewNode};

/// The suite's "now": a fixed instant with a sub-microsecond part that every backend must
/// truncate the same way.
pub(super) const T0: OffsetDateTime = datetime!(2030-01-31 12:00:00.123456789 UTC);

/// `T0` as stored (microseconds).
pub(super) const T0_STORED: OffsetDateTime = datetime!(2030-01-31 12:00:00.123456 UTC);

/// A random secret hash.
pub(super) fn random_hash() -> [u8; 32] {
    let mut h = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut h);
    h
}

/// An unbound, unused general token valid for 15 minutes from `T0`.
pub(super) fn token() -> JoinTokenRecord {
    JoinTokenRecord {
        id: JoinTokenId::generate(),
        secret_sha256: random_hash(),
        node_name: None,
        provision_id: None,
        role: Role::General,
        created_at: T0,
        expires_at: T0 + Duration::minutes(15),
        used_at: None,
        used_by_node: None,
        revoked_at: None,
    }
}

/// Stores `record`, panicking with `what` on failure.
pub(super) async fn put(store: &dyn NodeStore, record: &JoinTokenRecord) {
    store
        .create_join_token(record)
        .await
        .expect("create_join_token");
}

/// Reads a token that must exist.
pub(super) async fn get(store: &dyn NodeStore, id: &JoinTokenId) -> JoinTokenRecord {
    store
        .get_join_token(id)
        .await
        .expect("get_join_token")
        .expect("token exists")
}

/// A valid node name.
pub(super) fn name(s: &str) -> NodeName {
    NodeName::parse(s).expect("test names are valid")
}

/// A new node with a fresh id.
pub(super) fn new_node() -> NewNode {
    NewNode {
        id: NodeId::generate(),
        addresses: vec!["10.0.0.7".into(), "2001:db8::7".into()],
        agent_version: "1.2.3".into(),
        workload_kinds: vec![WorkloadKind::Apps],
        provision_id: None,
        cert_serial: "7f01".into(),
        cert_fingerprint: "ab".repeat(32),
        cert_expires_at: T0_STORED + Duration::days(365),
        certificate_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
    }
}

/// Stores a few tokens minted the real way, redeeming one of them, and returns the full
/// token strings: a raw dump of the backend must contain none of their secrets.
pub async fn store_canary_tokens(store: &dyn NodeStore) -> Vec<String> {
    let fingerprint = "cd".repeat(32);
    let mut tokens = Vec::new();
    for i in 0..3 {
        let minted = MintedJoinToken::mint(&fingerprint);
        let mut record = token();
        record.id = minted.id.clone();
        record.secret_sha256 = minted.secret_sha256;
        record.expires_at = OffsetDateTime::now_utc() + Duration::hours(1);
        put(store, &record).await;
        if i == 0 {
            let now = OffsetDateTime::now_utc();
            store
                .redeem_join_token(
                    &minted.id,
                    &minted.secret_sha256,
                    &name("canary-0"),
                    now,
                    &new_node(),
                )
                .await
                .expect("canary redemption");
        }
        tokens.push(minted.token.expose_secret().to_owned());
    }
    tokens
}

/// Panics if `dump` contains any form of the secret of any of `tokens`: the token string,
/// its base64url secret, the raw secret bytes or their hex.
pub fn assert_dump_holds_no_secret(dump: &[u8], tokens: &[String]) {
    assert!(!dump.is_empty(), "the dump is empty");
    for token in tokens {
        let parsed = ParsedJoinToken::parse(token).expect("canary token parses");
        let b64 = parsed.expose_secret().to_owned();
        let raw = URL_SAFE_NO_PAD.decode(&b64).expect("canary secret decodes");
        let forms: [(&str, Vec<u8>); 5] = [
            ("token string", token.clone().into_bytes()),
            ("base64url secret", b64.into_bytes()),
            ("raw secret bytes", raw.clone()),
            ("hex secret", hex::encode(&raw).into_bytes()),
            ("HEX secret", hex::encode_upper(&raw).into_bytes()),
        ];
        for (what, needle) in forms {
            let found = dump.windows(needle.len()).any(|w| w == needle.as_slice());
            assert!(!found, "the database dump contains a join token's {what}");
        }
    }
}
