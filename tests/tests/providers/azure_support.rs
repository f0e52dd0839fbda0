//! Shared set-up of the Azure tests: a fake (HTTPS, test CA), a client pointed at it with a
//! minted token, create requests, and the spec files the contract tests compare with.
use std::sync::Arc;
use std::time::Duration;

use levelrail_clouds::azure::{self, AzureProvider};
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::registry::GrantContext;
use levelrail_clouds::{CloudProvider as _, CreateServer, Ownership, ServerInfo, ServerState};
use levelrail_sim::fakes::azure::{FakeAzure, FakeAzureConfig, FakeAzureHandle};
use secrecy::SecretString;
use serde_json::Value;

pub(crate) use crate::hetzner_support::operator_key;

/// The resource group the fake starts with.
pub(crate) const GROUP: &str = "levelrail-nodes";
/// The location of the tests.
pub(crate) const LOCATION: &str = "westeurope";

/// A fake with 100 ms states; `tune` adjusts the rest.
pub(crate) async fn start_fake(tune: impl FnOnce(&mut FakeAzureConfig)) -> FakeAzureHandle {
    let mut config = FakeAzureConfig {
        state_step: Duration::from_millis(100),
        ..FakeAzureConfig::default()
    };
    tune(&mut config);
    FakeAzure::start(config).await.expect("the fake starts")
}

/// Quick retries, a 5 s timeout.
pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(500),
        max_retry_after: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    }
}

/// The grant context of the fake's subscription and group.
pub(crate) fn context(fake: &FakeAzureHandle, group: &str) -> GrantContext {
    GrantContext {
        subscription_id: Some(fake.config().subscription_id.clone()),
        resource_group: Some(group.into()),
        ..GrantContext::default()
    }
}

/// A client of `fake` with a freshly minted token, trusting the fake's CA.
pub(crate) fn client(fake: &FakeAzureHandle) -> AzureProvider {
    client_with(fake, &fake.mint_token(), GROUP)
}

/// A client of `fake` with `token` acting in `group`.
pub(crate) fn client_with(fake: &FakeAzureHandle, token: &str, group: &str) -> AzureProvider {
    AzureProvider::new(
        &fake.base_url(),
        &fake.prices_url(),
        SecretString::from(token.to_owned()),
        &context(fake, group),
        Arc::new(azure::limiter()),
        fast_policy(),
        Some(fake.ca_pem()),
    )
    .expect("the client builds")
}

/// Ownership of provision `provision` of control plane `cp-test`.
pub(crate) fn ownership(provision: &str) -> Ownership {
    Ownership {
        control_plane: "cp-test".into(),
        provision_id: provision.into(),
        node_name: format!("node-{provision}"),
    }
}

/// A create of `name` in westeurope as Standard_B2s for `provision`, with one operator key.
pub(crate) fn create_request(name: &str, provision: &str) -> CreateServer {
    CreateServer {
        name: name.into(),
        region: LOCATION.into(),
        size: "Standard_B2s".into(),
        image: None,
        user_data: "#cloud-config\nruncmd: [echo hello]\n".into(),
        ssh_public_keys: vec![operator_key(1)],
        ssh_source_cidr: None,
        ownership: ownership(provision),
    }
}

/// Polls `get_server` until the VM is running.
pub(crate) async fn wait_running(client: &AzureProvider, id: &str) -> ServerInfo {
    for _ in 0..100 {
        let info = client.get_server(id).await.expect("get_server");
        if info.state == ServerState::Running {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("VM {id} never reached running");
}

/// Names of the fake's resources of `kind` (`Microsoft.Network/networkInterfaces`, …).
pub(crate) fn names_of(fake: &FakeAzureHandle, kind: &str) -> Vec<String> {
    fake.resources()
        .into_iter()
        .filter(|(k, _, _)| k == kind)
        .map(|(_, n, _)| n)
        .collect()
}

/// A JSON file of `tests/specs`.
pub(crate) fn spec_json(file: &str) -> Value {
    levelrail_sim::specs::json(file)
}

/// The requests of a `golden-*.jsonl` file of `tests/specs`.
pub(crate) fn golden(file: &str) -> Vec<Value> {
    levelrail_sim::specs::read(file)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("golden line"))
        .collect()
}
