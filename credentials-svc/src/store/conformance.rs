//! The behaviour every `CredentialStore` backend must show, as one suite run against each.
//! It panics (with a message naming the broken behaviour) on the first deviation.
mod fixtures;

use levelrail_types::ApiScope;
use std::sync::Arc;

use time::macros::datetime;

use self::fixtures::{as_stored, clear, get, put, record, stored, verification};
use crate::model::ports::{ApiTokenRecord, CredentialRecord, CredentialStore, Revocation};
use crate::model::{ProviderId, Verification};

/// Runs every behaviour in sequence against `store`, which must be empty (a fresh
/// database). Panics on the first failure. Used by each backend's tests and reusable by
/// workspace-level tests.
pub async fn run(store: Arc<dyn CredentialStore>) {
    starts_empty(&*store).await;
    round_trips_every_provider(&*store).await;
    replacing_gives_a_new_id_and_clears_verification(&*store).await;
    lists_in_card_order_regardless_of_insert_order(&*store).await;
    deletes_report_whether_a_row_existed(&*store).await;
    records_verification_only_for_the_current_credential(&*store).await;
    lists_credentials_not_on_a_kek(&*store).await;
    swaps_envelopes_only_when_expected_matches(&*store).await;
    stores_api_token_hashes(&*store).await;
    revokes_api_tokens_but_never_the_last(&*store).await;
    concurrent_revocations_keep_one_admin(&*store).await;
    concurrent_puts_to_one_provider_leave_one_row(Arc::clone(&store)).await;
    binary_envelopes_round_trip_exactly(&*store).await;
}

async fn starts_empty(store: &dyn CredentialStore) {
    let listed = store.list_credentials().await.expect("list_credentials");
    assert!(
        listed.is_empty(),
        "a fresh store lists credentials: {listed:?}"
    );
    for p in ProviderId::ALL {
        assert_eq!(
            get(store, p).await,
            None,
            "a fresh store has a {p} credential"
        );
    }
    let stale = store
        .list_credentials_not_on_kek("k1")
        .await
        .expect("not_on_kek");
    assert!(stale.is_empty(), "a fresh store has rows not on a kek");
    let tokens = store.count_api_tokens().await.expect("count_api_tokens");
    assert_eq!(tokens, 0, "a fresh store counts API tokens");
    let token = store
        .get_api_token("lrt_none")
        .await
        .expect("get_api_token");
    assert_eq!(token, None, "a fresh store has an API token");
}

async fn round_trips_every_provider(store: &dyn CredentialStore) {
    for p in ProviderId::ALL {
        let r = record(p, "k1");
        put(store, &r).await;
        let got = get(store, p).await.expect("stored credential is missing");
        assert_eq!(got, as_stored(&r), "{p} credential did not round-trip");
        assert_eq!(
            got.saved_at.nanosecond(),
            123_456_000,
            "saved_at not truncated to µs"
        );
        assert_eq!(
            got.verification, None,
            "a new {p} credential has a verification"
        );
    }
    // Storing the same record again is idempotent.
    let again = record(ProviderId::Gcp, "k1");
    put(store, &again).await;
    put(store, &again).await;
    let got = get(store, ProviderId::Gcp).await;
    assert_eq!(
        got,
        Some(as_stored(&again)),
        "re-putting one record changed it"
    );
    clear(store).await;
}

async fn replacing_gives_a_new_id_and_clears_verification(store: &dyn CredentialStore) {
    let p = ProviderId::Aws;
    let old = record(p, "k1");
    put(store, &old).await;
    let recorded = store
        .record_verification(p, &old.id, &verification(true))
        .await;
    assert!(
        recorded.expect("record_verification"),
        "verification of current id refused"
    );

    let new = record(p, "k2");
    put(store, &new).await;

    let got = get(store, p).await.expect("replaced credential is missing");
    assert_eq!(got.id, new.id, "replacement kept the old id");
    assert_eq!(
        got,
        as_stored(&new),
        "replacement did not store the new record"
    );
    assert_eq!(
        got.verification, None,
        "replacement inherited the old verification"
    );
    let listed = store.list_credentials().await.expect("list_credentials");
    assert_eq!(listed.len(), 1, "replacement left {} rows", listed.len());

    // A record that carries a verification stores it as given.
    let verified = CredentialRecord {
        verification: Some(verification(false)),
        ..record(p, "k1")
    };
    put(store, &verified).await;
    let got = get(store, p).await;
    assert_eq!(
        got,
        Some(as_stored(&verified)),
        "put dropped the record's verification"
    );
    clear(store).await;
}

async fn lists_in_card_order_regardless_of_insert_order(store: &dyn CredentialStore) {
    use ProviderId::*;
    for p in [Gcp, Aws, Hetzner, Azure, DigitalOcean] {
        put(store, &record(p, "k1")).await;
    }
    let listed = store.list_credentials().await.expect("list_credentials");
    let order: Vec<_> = listed.iter().map(|r| r.provider).collect();
    assert_eq!(order, ProviderId::ALL, "list is not in card order");
    clear(store).await;
}

async fn deletes_report_whether_a_row_existed(store: &dyn CredentialStore) {
    let p = ProviderId::Hetzner;
    put(store, &record(p, "k1")).await;
    put(store, &record(ProviderId::Gcp, "k1")).await;
    let first = store.delete_credential(p).await.expect("delete_credential");
    assert!(first, "deleting a stored credential reported none");
    let second = store.delete_credential(p).await.expect("delete_credential");
    assert!(!second, "deleting a missing credential reported one");
    assert_eq!(
        get(store, p).await,
        None,
        "deleted credential is still readable"
    );
    assert!(
        get(store, ProviderId::Gcp).await.is_some(),
        "delete removed another provider"
    );
    clear(store).await;
}

async fn records_verification_only_for_the_current_credential(store: &dyn CredentialStore) {
    let p = ProviderId::Azure;
    let old = record(p, "k1");
    put(store, &old).await;
    let current = record(p, "k1");
    put(store, &current).await;
    let other = record(ProviderId::Gcp, "k1");
    put(store, &other).await;

    let v = verification(false);
    let ok = store.record_verification(p, &current.id, &v).await;
    assert!(ok.expect("record_verification"), "current id was refused");
    let got = get(store, p).await.expect("credential missing");
    let want = Verification {
        checked_at: stored(v.checked_at),
        ..v.clone()
    };
    assert_eq!(
        got.verification,
        Some(want.clone()),
        "verification did not round-trip"
    );

    let stale = store
        .record_verification(p, &old.id, &verification(true))
        .await;
    assert!(
        !stale.expect("record_verification"),
        "stale id was recorded"
    );
    let wrong = store
        .record_verification(p, &other.id, &verification(true))
        .await;
    assert!(
        !wrong.expect("record_verification"),
        "another provider's id was recorded"
    );
    let missing = store
        .record_verification(ProviderId::Hetzner, &old.id, &v)
        .await;
    assert!(
        !missing.expect("record_verification"),
        "recorded for a missing credential"
    );
    let got = get(store, p).await.expect("credential missing");
    assert_eq!(
        got.verification,
        Some(want),
        "a refused verification changed the row"
    );
    assert_eq!(
        get(store, ProviderId::Gcp)
            .await
            .and_then(|r| r.verification),
        None
    );
    clear(store).await;
}

async fn lists_credentials_not_on_a_kek(store: &dyn CredentialStore) {
    use ProviderId::*;
    for (p, kek) in [(Gcp, "k1"), (Aws, "k2"), (Hetzner, "k1"), (Azure, "k2")] {
        put(store, &record(p, kek)).await;
    }
    let on_k1 = store
        .list_credentials_not_on_kek("k2")
        .await
        .expect("not_on_kek");
    let providers: Vec<_> = on_k1.iter().map(|r| r.provider).collect();
    assert_eq!(providers, [Hetzner, Gcp], "rows not on k2, in card order");
    assert!(
        on_k1.iter().all(|r| r.kek_id == "k1"),
        "not_on_kek returned a k2 row"
    );
    let all = store
        .list_credentials_not_on_kek("k3")
        .await
        .expect("not_on_kek");
    assert_eq!(all.len(), 4, "every row is off an unused kek");
    clear(store).await;
}

async fn swaps_envelopes_only_when_expected_matches(store: &dyn CredentialStore) {
    let p = ProviderId::DigitalOcean;
    let r = record(p, "k1");
    put(store, &r).await;
    let v = verification(true);
    store
        .record_verification(p, &r.id, &v)
        .await
        .expect("record_verification");

    let swapped = store
        .swap_envelope(&r.id, &r.envelope, b"rewrapped", "k2")
        .await;
    assert!(
        swapped.expect("swap_envelope"),
        "swap with the current envelope failed"
    );
    let got = get(store, p).await.expect("credential missing");
    assert_eq!(
        got.envelope, b"rewrapped",
        "swap did not store the new envelope"
    );
    assert_eq!(got.kek_id, "k2", "swap did not store the new kek id");
    assert_eq!(got.id, r.id, "swap changed the id");
    assert!(got.verification.is_some(), "swap cleared the verification");

    let stale = store
        .swap_envelope(&r.id, &r.envelope, b"lost update", "k3")
        .await;
    assert!(
        !stale.expect("swap_envelope"),
        "swap with a stale envelope succeeded"
    );
    let unknown = store
        .swap_envelope("no-such-id", b"rewrapped", b"x", "k3")
        .await;
    assert!(
        !unknown.expect("swap_envelope"),
        "swap of an unknown id succeeded"
    );
    let got = get(store, p).await.expect("credential missing");
    assert_eq!(
        (got.envelope, got.kek_id),
        (b"rewrapped".to_vec(), "k2".into())
    );
    clear(store).await;
}

async fn stores_api_token_hashes(store: &dyn CredentialStore) {
    let token = |id: &str, byte: u8| ApiTokenRecord {
        id: id.into(),
        secret_sha256: [byte; 32],
        label: "admin".into(),
        created_at: datetime!(2025-03-04 05:06:07.000001999 -05:00),
        revoked_at: None,
        scope: ApiScope::Admin,
        expires_at: None,
    };
    // A scope and an expiry round-trip too.
    let a = ApiTokenRecord {
        scope: ApiScope::CredentialsAdmin,
        expires_at: Some(datetime!(2025-04-04 05:06:07.000001999 UTC)),
        ..token("lrt_a", 0xa5)
    };
    let b = token("lrt_b", 0x00);
    for t in [&a, &b] {
        store.put_api_token(t).await.expect("put_api_token");
    }
    assert_eq!(
        store.count_api_tokens().await.expect("count"),
        2,
        "two tokens stored"
    );
    for t in [&a, &b] {
        let got = store.get_api_token(&t.id).await.expect("get_api_token");
        let want = ApiTokenRecord {
            created_at: stored(t.created_at),
            expires_at: t.expires_at.map(stored),
            ..t.clone()
        };
        assert_eq!(got, Some(want), "API token {} did not round-trip", t.id);
    }
    let missing = store
        .get_api_token("lrt_missing")
        .await
        .expect("get_api_token");
    assert_eq!(missing, None, "an unknown token id was found");
    // Putting an existing id replaces it rather than adding a row.
    let relabelled = ApiTokenRecord {
        label: "ci".into(),
        ..a.clone()
    };
    store
        .put_api_token(&relabelled)
        .await
        .expect("put_api_token");
    assert_eq!(
        store.count_api_tokens().await.expect("count"),
        2,
        "re-put added a row"
    );
    let got = store.get_api_token("lrt_a").await.expect("get_api_token");
    assert_eq!(
        got.map(|t| t.label),
        Some("ci".into()),
        "re-put did not replace"
    );
    let ids: Vec<String> = store
        .list_api_tokens()
        .await
        .expect("list_api_tokens")
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids.len(), 2, "list_api_tokens returns every token");
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "list_api_tokens is ordered by id"
    );
}

async fn concurrent_puts_to_one_provider_leave_one_row(store: Arc<dyn CredentialStore>) {
    let p = ProviderId::Hetzner;
    let records: Vec<_> = (0..20).map(|_| record(p, "k1")).collect();
    let tasks: Vec<_> = records
        .iter()
        .cloned()
        .map(|r| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.put_credential(&r).await })
        })
        .collect();
    for task in tasks {
        task.await
            .expect("put task panicked")
            .expect("concurrent put_credential");
    }
    let listed = store.list_credentials().await.expect("list_credentials");
    assert_eq!(
        listed.len(),
        1,
        "20 concurrent puts left {} rows",
        listed.len()
    );
    let winner = &listed[0];
    assert!(
        records.iter().any(|r| as_stored(r) == *winner),
        "the surviving row is none of the records put"
    );
    clear(&*store).await;
}

async fn binary_envelopes_round_trip_exactly(store: &dyn CredentialStore) {
    let p = ProviderId::Gcp;
    let all_bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let r = CredentialRecord {
        envelope: all_bytes.clone(),
        ..record(p, "k1")
    };
    put(store, &r).await;
    let got = get(store, p).await.expect("credential missing");
    assert_eq!(
        got.envelope, all_bytes,
        "binary envelope changed in storage"
    );

    let rewrapped: Vec<u8> = all_bytes.iter().map(|b| b ^ 0xff).collect();
    let swapped = store
        .swap_envelope(&r.id, &all_bytes, &rewrapped, "k2")
        .await;
    assert!(
        swapped.expect("swap_envelope"),
        "swap compared binary envelopes wrongly"
    );
    let got = get(store, p).await.expect("credential missing");
    assert_eq!(
        got.envelope, rewrapped,
        "swapped binary envelope changed in storage"
    );
    clear(store).await;
}

/// Stores a live token `id` of `scope`, made at `at`, expiring at `expires_at`.
async fn put_token(
    store: &dyn CredentialStore,
    id: &str,
    scope: ApiScope,
    at: time::OffsetDateTime,
    expires_at: Option<time::OffsetDateTime>,
) {
    store
        .put_api_token(&ApiTokenRecord {
            id: id.into(),
            secret_sha256: [1; 32],
            label: "revocable".into(),
            created_at: at,
            revoked_at: None,
            scope,
            expires_at,
        })
        .await
        .expect("put_api_token");
}

async fn revokes_api_tokens_but_never_the_last(store: &dyn CredentialStore) {
    let at = datetime!(2025-05-06 07:08:09.000001 UTC);
    for id in ["lrt_r1", "lrt_r2"] {
        put_token(store, id, ApiScope::Admin, at, None).await;
    }
    let live = |tokens: Vec<ApiTokenRecord>| {
        tokens
            .into_iter()
            .filter(|t| t.revoked_at.is_none())
            .count()
    };
    let before = live(store.list_api_tokens().await.expect("list"));
    assert_eq!(
        store.revoke_api_token("lrt_r1", at).await.expect("revoke"),
        Revocation::Revoked
    );
    let got = store
        .get_api_token("lrt_r1")
        .await
        .expect("get")
        .expect("row kept");
    assert_eq!(
        got.revoked_at,
        Some(stored(at)),
        "the revocation time is not stored"
    );
    assert_eq!(
        store
            .revoke_api_token("lrt_r1", at + time::Duration::hours(1))
            .await
            .expect("again"),
        Revocation::Revoked,
        "revoking twice is not idempotent"
    );
    let again = store
        .get_api_token("lrt_r1")
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        again.revoked_at,
        Some(stored(at)),
        "a second revocation moved the time"
    );
    assert_eq!(
        store
            .revoke_api_token("lrt_nope", at)
            .await
            .expect("unknown"),
        Revocation::NotFound
    );
    assert_eq!(
        live(store.list_api_tokens().await.expect("list")),
        before - 1
    );
    // Revoke every other live token; the last one stays.
    let mut outcomes = Vec::new();
    for t in store.list_api_tokens().await.expect("list") {
        if t.revoked_at.is_none() {
            outcomes.push(store.revoke_api_token(&t.id, at).await.expect("revoke"));
        }
    }
    assert_eq!(
        outcomes.last(),
        Some(&Revocation::LastToken),
        "{outcomes:?}"
    );
    assert_eq!(
        live(store.list_api_tokens().await.expect("list")),
        1,
        "the last live token was revoked"
    );
    // Only an admin token that still lives counts: an expired admin token does not keep
    // the last live one revocable, and a token of another scope is always revocable.
    let last = store
        .list_api_tokens()
        .await
        .expect("list")
        .into_iter()
        .find(|t| t.revoked_at.is_none())
        .expect("the last live token");
    for (id, scope, expires_at) in [
        (
            "lrt_expired_admin",
            ApiScope::Admin,
            Some(at - time::Duration::hours(1)),
        ),
        (
            "lrt_expiring_admin",
            ApiScope::Admin,
            Some(at + time::Duration::days(30)),
        ),
        ("lrt_reader", ApiScope::Read, None),
    ] {
        put_token(store, id, scope, at, expires_at).await;
    }
    assert_eq!(
        store.revoke_api_token(&last.id, at).await.expect("revoke"),
        Revocation::LastToken,
        "an admin token that expires let the last one that never expires be revoked"
    );
    assert_eq!(
        store
            .revoke_api_token("lrt_expiring_admin", at)
            .await
            .expect("revoke"),
        Revocation::Revoked,
        "an expiring admin token could not be revoked beside one that never expires"
    );
    assert_eq!(
        store
            .revoke_api_token("lrt_reader", at)
            .await
            .expect("revoke"),
        Revocation::Revoked,
        "a read token could not be revoked"
    );
    clear(store).await;
}

/// Two revocations at once of the last two admin tokens: one is refused, whatever the
/// database's isolation.
async fn concurrent_revocations_keep_one_admin(store: &dyn CredentialStore) {
    let at = datetime!(2025-05-06 07:08:09.000001 UTC);
    for id in ["lrt_c1", "lrt_c2"] {
        put_token(store, id, ApiScope::Admin, at, None).await;
    }
    // Every other token, left by the tests before, revoked: these two are the last.
    for mut t in store.list_api_tokens().await.expect("list") {
        if !t.id.starts_with("lrt_c") && t.revoked_at.is_none() {
            t.revoked_at = Some(at);
            store.put_api_token(&t).await.expect("put_api_token");
        }
    }
    for _ in 0..10 {
        let (a, b) = tokio::join!(
            store.revoke_api_token("lrt_c1", at),
            store.revoke_api_token("lrt_c2", at)
        );
        let mut outcomes = [a.expect("revoke"), b.expect("revoke")];
        outcomes.sort_by_key(|o| *o == Revocation::LastToken);
        assert_eq!(
            outcomes,
            [Revocation::Revoked, Revocation::LastToken],
            "both of the last two admin tokens were revoked, or neither"
        );
        // Both live again for the next round.
        for id in ["lrt_c1", "lrt_c2"] {
            let mut t = store.get_api_token(id).await.expect("get").expect("row");
            t.revoked_at = None;
            store.put_api_token(&t).await.expect("put_api_token");
        }
    }
    clear(store).await;
}
