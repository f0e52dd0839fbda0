//! A control plane on the Hetzner fake (its servers never leave `initializing`), with the
//! bench's Hetzner token stored as the credential.
use std::time::Duration;

use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig, FakeHetznerHandle};
use secrecy::SecretString;

use crate::harness;

/// The Hetzner token the fake accepts.
pub(crate) const TOKEN: &str = "benchtoken00000000000000000000000000000000000000000000000000000000";

/// The fake, limiting the project to `per_hour` requests an hour (refilling evenly, as
/// Hetzner does) or not at all, the control plane on `database_url` (SQLite in its data
/// directory when `None`), and the data directory.
pub(crate) async fn start(
    per_hour: Option<u32>,
    database_url: Option<String>,
) -> (FakeHetznerHandle, harness::TestApp, tempfile::TempDir) {
    let fake = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        state_step: Duration::from_secs(3600),
        rate_limit: per_hour,
        ..Default::default()
    })
    .await
    .expect("fake");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = harness::test_config(tmp.path());
    cfg.storage.database_url = database_url.map(SecretString::from);
    harness::set_endpoint(&mut cfg, ProviderId::Hetzner, "api", fake.base_url());
    let app = harness::TestApp::start(cfg).await.expect("app");
    app.credentials
        .set_credential(CredentialInput::Token {
            provider: ProviderId::Hetzner,
            token: SecretString::from(TOKEN),
        })
        .await
        .expect("credential");
    (fake, app, tmp)
}
