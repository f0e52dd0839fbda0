//! Shared set-up of the Hetzner tests: a fake, a client pointed at it, create requests,
//! operator keys, and checks of the fake's request log against `hcloud-openapi.json`.
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use levelrail_clouds::hetzner::HetznerProvider;
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::{CloudProvider as _, CreateServer, Ownership, ServerInfo, ServerState};
use levelrail_sim::fakes::hetzner::{
    FakeHetzner, FakeHetznerConfig, FakeHetznerHandle, LoggedRequest,
};
use levelrail_sim::openapi;
use secrecy::SecretString;

/// The token the fake accepts.
pub(crate) const TOKEN: &str =
    "hcloud-test-4b9e1f7a2c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7f";

/// A fake with the test token and 1 s states; `tune` adjusts the rest.
pub(crate) async fn start_fake(tune: impl FnOnce(&mut FakeHetznerConfig)) -> FakeHetznerHandle {
    let mut config = FakeHetznerConfig {
        token: TOKEN.into(),
        ..FakeHetznerConfig::default()
    };
    tune(&mut config);
    FakeHetzner::start(config).await.expect("the fake starts")
}

/// Quick retries, a 5 s timeout.
pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(1),
        max_retry_after: Duration::from_secs(60),
        timeout: Duration::from_secs(5),
    }
}

/// A client of `fake` with `token`, Hetzner's limiter and quick retries.
pub(crate) fn client(fake: &FakeHetznerHandle, token: &str) -> HetznerProvider {
    client_with(fake, token, fast_policy())
}

/// A client of `fake` with `token` and `policy`.
pub(crate) fn client_with(
    fake: &FakeHetznerHandle,
    token: &str,
    policy: RetryPolicy,
) -> HetznerProvider {
    HetznerProvider::new(
        &fake.base_url(),
        SecretString::from(token.to_owned()),
        Arc::new(RateLimiter::hetzner()),
        policy,
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

/// A create of `name` in fsn1 as cx22 for `provision`, with one operator key.
pub(crate) fn create_request(name: &str, provision: &str) -> CreateServer {
    CreateServer {
        name: name.into(),
        region: "fsn1".into(),
        size: "cx22".into(),
        image: None,
        user_data: "#cloud-config\nruncmd: [echo hello]\n".into(),
        ssh_public_keys: vec![operator_key(1)],
        ssh_source_cidr: None,
        ownership: ownership(provision),
    }
}

/// A well-formed OpenSSH ed25519 public key, distinct per `seed`.
pub(crate) fn operator_key(seed: u8) -> String {
    let mut blob = Vec::new();
    blob.extend_from_slice(&11u32.to_be_bytes());
    blob.extend_from_slice(b"ssh-ed25519");
    blob.extend_from_slice(&32u32.to_be_bytes());
    blob.extend((0..32u8).map(|i| i.wrapping_mul(7).wrapping_add(seed)));
    format!(
        "ssh-ed25519 {} operator-{seed}@laptop",
        base64::engine::general_purpose::STANDARD.encode(blob)
    )
}

/// Polls `get_server` (virtual time) until the server is running.
pub(crate) async fn wait_running(client: &HetznerProvider, id: &str) -> ServerInfo {
    for _ in 0..60 {
        let info = client.get_server(id).await.expect("get_server");
        if info.state == ServerState::Running {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("server {id} never reached running");
}

/// Every request and answer in `log` that the Hetzner description rejects, one line each.
pub(crate) fn contract_violations(log: &[LoggedRequest]) -> Vec<String> {
    let api = openapi::hcloud();
    let mut out = Vec::new();
    for r in log {
        if let Err(errs) = api.validate_request(&r.method, &r.path, &r.body) {
            out.extend(
                errs.into_iter()
                    .map(|e| format!("request {} {}: {e}", r.method, r.path)),
            );
        }
        if let Some(status) = r.status
            && let Err(errs) = api.validate_response(&r.method, &r.path, status, &r.response)
        {
            out.extend(
                errs.into_iter()
                    .map(|e| format!("response {status} to {} {}: {e}", r.method, r.path)),
            );
        }
    }
    out
}

/// How many logged requests were `method` on a path starting with `prefix`.
pub(crate) fn count(log: &[LoggedRequest], method: &str, prefix: &str) -> usize {
    log.iter()
        .filter(|r| r.method == method && r.path.starts_with(prefix))
        .count()
}
