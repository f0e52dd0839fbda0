//! The credentials service and the provider registry wired as `levelrail serve` wires them
//! (in-process broker, token exchanges, verification through the grant), pointed at fake
//! Azure and GCP clouds, for the federation and verification tests.
use std::sync::Arc;

use levelrail::bridge::{InProcessBroker, RegistryProbe};
use levelrail::config::AzureGcpEndpoints;
use levelrail::providers::{AzureGcp, Endpoints};
use levelrail_credentials::broker::GrantIssuers;
use levelrail_credentials::domain::Credentials;
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_provisioner::providers::registry::ProviderRegistry;

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
    let probe = RegistryProbe::default().with_exchange(Arc::new(issuers.clone()));
    let credentials = startup::open(
        StorageConfig {
            data_dir: dir.path(),
            database_url: None,
            master_key: None,
        },
        Arc::new(probe.clone()),
        Arc::new(issuers),
    )
    .await
    .expect("credentials service");
    let endpoints = Endpoints {
        azure_gcp,
        ..Endpoints::default()
    };
    let registry = Arc::new(levelrail::providers::registry(
        Arc::new(InProcessBroker::new(credentials.clone())),
        &endpoints,
    ));
    probe.set_registry(registry.clone());
    Stack {
        credentials,
        registry,
        _dir: dir,
    }
}
