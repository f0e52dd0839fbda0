//! The credentials service and the provider registry wired as `levelrail serve` wires them
//! (in-process broker, token exchanges, verification through the grant), pointed at fake
//! Azure and GCP clouds, for the federation and verification tests.
use std::sync::Arc;

use levelrail::bridge::InProcessBroker;
use levelrail::config::AzureGcpEndpoints;
use levelrail::providers::{AzureGcp, Endpoints};
use levelrail_clouds::registry::ProviderRegistry;
use levelrail_credentials::app::Credentials;
use levelrail_credentials::broker::GrantIssuers;
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_credentials::verify::Verifier;

/// A running credentials service and registry.
pub(crate) struct Stack {
    pub(crate) credentials: Credentials,
    pub(crate) registry: Arc<ProviderRegistry>,
    _dir: tempfile::TempDir,
}

/// Endpoints of the public clouds, changed by `tune`.
pub(crate) fn urls(tune: impl FnOnce(&mut AzureGcpEndpoints)) -> AzureGcpEndpoints {
    let mut urls = AzureGcpEndpoints::default();
    tune(&mut urls);
    urls
}

/// The stack against `urls`, trusting `ca_pem`.
pub(crate) async fn stack(urls: AzureGcpEndpoints, ca_pem: Option<&str>) -> Stack {
    let dir = tempfile::tempdir().expect("tempdir");
    let azure_gcp = AzureGcp {
        urls,
        ca_pem: ca_pem.map(str::to_owned),
    };
    let issuers = azure_gcp.issuers(GrantIssuers::default()).expect("issuers");
    let endpoints = Endpoints {
        azure_gcp,
        ..Endpoints::default()
    };
    let clients = Arc::new(levelrail::providers::clients(&endpoints));
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
        _dir: dir,
    }
}
