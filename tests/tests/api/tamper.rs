//! Stored records are bound to their row and tamper-evident; master-key rotation survives an
//! interruption.
use crate::harness::{TestApp, test_config};
use levelrail_credentials::model::{CredentialInput, CredentialsError, ProviderId};
use levelrail_sim::secrets::Canary;
use secrecy::SecretString;

fn token_input(provider: ProviderId, canary: &Canary) -> CredentialInput {
    let token = match provider {
        ProviderId::Hetzner => canary.hetzner_token(),
        _ => canary.digitalocean_token(),
    };
    CredentialInput::Token {
        provider,
        token: SecretString::from(token),
    }
}

fn assert_no_plaintext(err: &CredentialsError, canary: &Canary) {
    canary.assert_absent("decrypt error", format!("{err} {err:?}").as_bytes());
    let status = tonic::Status::from(err_clone(err));
    assert_eq!(status.code(), tonic::Code::DataLoss, "{status:?}");
    canary.assert_absent("status", status.message().as_bytes());
}

fn err_clone(err: &CredentialsError) -> CredentialsError {
    match err {
        CredentialsError::Crypto(_) => {
            CredentialsError::Crypto(levelrail_credentials::crypto::CryptoError::Decrypt)
        }
        other => CredentialsError::FailedPrecondition(format!("unexpected error kind: {other}")),
    }
}

#[tokio::test]
async fn a_ciphertext_moved_to_another_row_does_not_decrypt() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let creds = &app.credentials;
    let canary = Canary::new();
    creds
        .set_credential(token_input(ProviderId::Hetzner, &canary))
        .await
        .unwrap();
    creds
        .set_credential(token_input(ProviderId::DigitalOcean, &Canary::new()))
        .await
        .unwrap();
    let store = creds.store();
    let hz = store
        .get_credential(ProviderId::Hetzner)
        .await
        .unwrap()
        .unwrap();
    let dox = store
        .get_credential(ProviderId::DigitalOcean)
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .swap_envelope(&dox.id, &dox.envelope, &hz.envelope, &hz.kek_id)
            .await
            .unwrap()
    );
    let err = creds
        .issue_access(ProviderId::DigitalOcean, "test")
        .await
        .unwrap_err();
    assert!(matches!(err, CredentialsError::Crypto(_)), "{err:?}");
    assert_no_plaintext(&err, &canary);
    // The untouched row still works.
    creds
        .issue_access(ProviderId::Hetzner, "test")
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test]
async fn any_single_flipped_bit_in_a_stored_record_fails_to_decrypt() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let creds = &app.credentials;
    let canary = Canary::new();
    creds
        .set_credential(token_input(ProviderId::Hetzner, &canary))
        .await
        .unwrap();
    let store = creds.store();
    let original = store
        .get_credential(ProviderId::Hetzner)
        .await
        .unwrap()
        .unwrap();
    // A grant cached from the intact row must not outlive it.
    creds
        .issue_access(ProviderId::Hetzner, "test")
        .await
        .unwrap();
    let mut current = original.envelope.clone();
    for byte in 0..original.envelope.len() {
        for bit in 0..8 {
            let mut flipped = original.envelope.clone();
            flipped[byte] ^= 1 << bit;
            assert!(
                store
                    .swap_envelope(&original.id, &current, &flipped, &original.kek_id)
                    .await
                    .unwrap()
            );
            current = flipped;
            let err = creds
                .issue_access(ProviderId::Hetzner, "test")
                .await
                .expect_err("tampered record must not decrypt");
            canary.assert_absent("tamper error", format!("{err} {err:?}").as_bytes());
        }
    }
    assert!(
        store
            .swap_envelope(&original.id, &current, &original.envelope, &original.kek_id)
            .await
            .unwrap()
    );
    creds
        .issue_access(ProviderId::Hetzner, "test")
        .await
        .unwrap();
    app.stop().await;
}

/// A Hetzner and a DigitalOcean credential, each holding a fresh canary, stored in `app`.
async fn store_canaries(app: &TestApp) -> Vec<(ProviderId, Canary)> {
    let canaries: Vec<(ProviderId, Canary)> = [ProviderId::Hetzner, ProviderId::DigitalOcean]
        .into_iter()
        .map(|p| (p, Canary::new()))
        .collect();
    for (p, c) in &canaries {
        app.credentials
            .set_credential(token_input(*p, c))
            .await
            .unwrap();
    }
    canaries
}

/// Re-wraps `provider`'s stored data key under `ring`'s primary, as a rotation step does.
async fn rewrap_row(
    app: &TestApp,
    provider: ProviderId,
    ring: &levelrail_credentials::crypto::Keyring,
) {
    use levelrail_credentials::crypto::{self, AadContext};
    let store = app.credentials.store();
    let row = store.get_credential(provider).await.unwrap().unwrap();
    let ctx = AadContext {
        credential_id: &row.id,
        provider: provider.as_str(),
    };
    let envelope = crypto::rewrap(ring, &ctx, &row.envelope).unwrap();
    let primary = ring.primary().id();
    assert!(
        store
            .swap_envelope(&row.id, &row.envelope, &envelope, primary)
            .await
            .unwrap()
    );
}

/// Each canary's credential is wrapped by the key `kek_id` (when given) and its grant still
/// carries the canary.
async fn assert_sealed_under(
    app: &TestApp,
    canaries: &[(ProviderId, Canary)],
    kek_id: Option<&str>,
) {
    for (p, c) in canaries {
        let rec = app
            .credentials
            .store()
            .get_credential(*p)
            .await
            .unwrap()
            .unwrap();
        if let Some(kek_id) = kek_id {
            assert_eq!(rec.kek_id, kek_id, "{p:?}");
        }
        let grant = app
            .credentials
            .issue_access(*p, "after rotation")
            .await
            .unwrap();
        let levelrail_credentials::broker::GrantSecret::Bearer(t) = grant.secret else {
            panic!("a bearer grant")
        };
        assert!(secrecy::ExposeSecret::expose_secret(&t).contains(c.value()));
    }
}

#[tokio::test]
async fn an_interrupted_master_key_rotation_finishes_on_the_next_start() {
    use levelrail_credentials::crypto::KeyringFile;
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::start(test_config(tmp.path())).await.unwrap();
    let canaries = store_canaries(&app).await;
    // Simulate a rotation that stopped midway: a key added and promoted, one data key
    // re-wrapped, then the process died.
    let file = KeyringFile::new(tmp.path().join("master.key"));
    let old = file.load().unwrap().primary().id().to_owned();
    let new = file.add_key().unwrap();
    file.promote(&new).unwrap();
    let ring = file.load().unwrap();
    rewrap_row(&app, ProviderId::Hetzner, &ring).await;
    // Reads work throughout: one row on each key.
    for (p, _) in &canaries {
        app.credentials
            .issue_access(*p, "during rotation")
            .await
            .unwrap();
    }
    app.stop().await;

    let app = TestApp::start(test_config(tmp.path())).await.unwrap();
    let ring = KeyringFile::new(tmp.path().join("master.key"))
        .load()
        .unwrap();
    assert_eq!(ring.primary().id(), new);
    assert!(
        ring.get(&old).is_none(),
        "the old key is retired after the resumed rotation"
    );
    assert_sealed_under(&app, &canaries, Some(&new)).await;
    // A full rotation through the service works too and keeps everything readable.
    let report = app.credentials.rotate_master_key().await.unwrap();
    // The two credentials, and the node CA's key sealed in the data directory.
    assert_eq!(report.rewrapped, 3);
    for (p, _) in &canaries {
        app.credentials
            .issue_access(*p, "after second rotation")
            .await
            .unwrap();
    }
    app.stop().await;
    // The CA's sealed key was re-wrapped before the old key was retired: it still opens.
    let app = TestApp::start(test_config(tmp.path())).await.unwrap();
    app.stop().await;
}

/// A master key from the environment rotates: started with the new key and the previous
/// one, the service re-wraps every data key (those of earlier releases, named `env`,
/// included) and the node CA's sealed key, after which the new key alone opens everything. Started with a new key and
/// without the previous one, it refuses to start, naming the variable, and keeps every row.
#[tokio::test]
async fn a_master_key_from_the_environment_rotates_with_the_previous_key() {
    use std::sync::Arc;

    use base64::Engine as _;
    use levelrail::config::MasterKey;
    use levelrail_credentials::crypto::{
        ENV_KEY_ID, KeyEncryptionKey, KeyState, Keyring, LocalKek, env_key_id,
    };
    use secrecy::SecretBox;

    let b64 = |k: [u8; 32]| base64::engine::general_purpose::STANDARD.encode(k);
    let (old, new) = ([21u8; 32], [22u8; 32]);
    let keys = |current: [u8; 32], previous: Option<[u8; 32]>| MasterKey {
        current: SecretString::from(b64(current)),
        previous: previous.map(|k| SecretString::from(b64(k))),
    };
    let tmp = tempfile::tempdir().unwrap();
    let start = |k: MasterKey| {
        let mut cfg = test_config(tmp.path());
        cfg.master_key = Some(k);
        TestApp::start(cfg)
    };

    let app = start(keys(old, None)).await.unwrap();
    let canaries = store_canaries(&app).await;
    let store = app.credentials.store().clone();
    // One row as an earlier release left it: wrapped by the same key, under the id `env`.
    let legacy = store
        .get_credential(ProviderId::DigitalOcean)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(legacy.kek_id, env_key_id(&old));
    let kek = |id: &str, k: [u8; 32]| -> Arc<dyn KeyEncryptionKey> {
        Arc::new(LocalKek::new(id, SecretBox::new(Box::new(k))).unwrap())
    };
    let to_legacy = Keyring::new(vec![
        (kek(ENV_KEY_ID, old), KeyState::Primary),
        (kek(&env_key_id(&old), old), KeyState::Retiring),
    ])
    .unwrap();
    rewrap_row(&app, ProviderId::DigitalOcean, &to_legacy).await;
    app.stop().await;

    // A new key without the previous one: refused at start, naming what to set.
    let refused = start(keys(new, None)).await.unwrap_err();
    let text = format!("{refused:#}");
    assert!(text.contains("LEVELRAIL_MASTER_KEY_PREVIOUS"), "{text}");
    for (_, c) in &canaries {
        c.assert_absent("start error", text.as_bytes());
    }

    // The new key with the previous one: every row re-wrapped, every secret intact.
    let app = start(keys(new, Some(old))).await.unwrap();
    assert_sealed_under(&app, &canaries, Some(&env_key_id(&new))).await;
    app.stop().await;

    // The new key alone now opens everything, the node CA's sealed key included (no
    // plaintext copy of it in the data directory).
    assert!(tmp.path().join("ca.key.sealed").exists());
    assert!(!tmp.path().join("ca.key").exists());
    let app = start(keys(new, None)).await.unwrap();
    assert_sealed_under(&app, &canaries, None).await;
    app.stop().await;
}
