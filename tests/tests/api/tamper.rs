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

#[tokio::test]
async fn an_interrupted_master_key_rotation_finishes_on_the_next_start() {
    use levelrail_credentials::crypto::{self, AadContext, KeyringFile};
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::start(test_config(tmp.path())).await.unwrap();
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
    // Simulate a rotation that stopped midway: a key added and promoted, one data key
    // re-wrapped, then the process died.
    let file = KeyringFile::new(tmp.path().join("master.key"));
    let old = file.load().unwrap().primary().id().to_owned();
    let new = file.add_key().unwrap();
    file.promote(&new).unwrap();
    let ring = file.load().unwrap();
    let store = app.credentials.store().clone();
    let first = store
        .get_credential(ProviderId::Hetzner)
        .await
        .unwrap()
        .unwrap();
    let ctx = AadContext {
        credential_id: &first.id,
        provider: "hetzner",
    };
    let rewrapped = crypto::rewrap(&ring, &ctx, &first.envelope).unwrap();
    assert!(
        store
            .swap_envelope(&first.id, &first.envelope, &rewrapped, &new)
            .await
            .unwrap()
    );
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
    for (p, c) in &canaries {
        let rec = app
            .credentials
            .store()
            .get_credential(*p)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rec.kek_id, new);
        let grant = app
            .credentials
            .issue_access(*p, "after rotation")
            .await
            .unwrap();
        let levelrail_credentials::broker::GrantSecret::Bearer(t) = grant.secret else {
            panic!()
        };
        assert!(secrecy::ExposeSecret::expose_secret(&t).contains(c.value()));
    }
    // A full rotation through the service works too and keeps everything readable.
    let report = app.credentials.rotate_master_key().await.unwrap();
    assert_eq!(report.rewrapped, 2);
    for (p, _) in &canaries {
        app.credentials
            .issue_access(*p, "after second rotation")
            .await
            .unwrap();
    }
    app.stop().await;
}
