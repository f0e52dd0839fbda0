//! The credentials service and the provider registry wired as `levelrail serve` wires them
//! (in-process broker, token exchanges, verification through the grant), pointed at fake
//! Azure and GCP clouds, for the federation and verification tests.
use std::sync::Arc;

use levelrail::bridge::InProcessBroker;
use levelrail_clouds::ProviderId;
use levelrail_clouds::cloud::Settings;
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_credentials::app::Credentials;
use levelrail_credentials::broker::token_files::TokenFileDir;
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_credentials::verify::Verifier;

/// A running credentials service and registry.
pub(crate) struct Stack {
    pub(crate) credentials: Credentials,
    pub(crate) registry: Arc<ProviderRegistry>,
    /// The control plane's `--token-file-dir`.
    pub(crate) tokens: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

/// The public clouds' endpoints, but for `urls` (cloud, endpoint key, URL).
pub(crate) fn urls(urls: &[(ProviderId, &str, String)]) -> Settings {
    let mut settings = Settings::default();
    for (id, key, url) in urls {
        settings
            .set_url(*id, key, url.clone())
            .expect("a declared endpoint");
    }
    settings
}

/// The stack at `settings`, trusting `ca_pem`.
pub(crate) async fn stack(mut settings: Settings, ca_pem: Option<&str>) -> Stack {
    let dir = tempfile::tempdir().expect("tempdir");
    settings.extra_ca_pem = ca_pem.map(str::to_owned);
    let tokens = tempfile::tempdir().expect("tempdir");
    let lending = levelrail::providers::Lending {
        allow_ambient_aws: false,
        token_files: TokenFileDir::new(tokens.path(), dir.path()).expect("token directory"),
    };
    let issuers = levelrail::providers::issuers(&settings, &lending).expect("issuers");
    let clients = Arc::new(levelrail_clouds::clients(&settings));
    let issuers = Arc::new(issuers);
    let credentials = startup::open(
        StorageConfig {
            data_dir: dir.path(),
            database_url: None,
            master_key: None,
        },
        Verifier::new(clients.clone(), issuers.clone()),
        issuers,
    )
    .await
    .expect("credentials service");
    let registry = Arc::new(ProviderRegistry::new(
        Arc::new(InProcessBroker::new(credentials.clone())),
        clients,
    ));
    Stack {
        credentials,
        registry,
        tokens,
        _dir: dir,
    }
}
