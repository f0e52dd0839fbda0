//! Shared set-up of the DigitalOcean tests: a fake, a client pointed at it, a create
//! request, and checks of the fake's request log.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use levelrail_clouds::digitalocean::DigitalOceanProvider;
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::{CreateServer, Ownership};
use levelrail_sim::fakes::digitalocean::{FakeDigitalOcean, FakeDigitalOceanConfig, LoggedRequest};
use secrecy::SecretString;

/// The token the fakes accept.
pub(crate) const TOKEN: &str =
    "dop_v1_3f9c2a7e5b1d4c6a8e0f2b4d6a8c0e1f3a5b7d9c1e3f5a7b9d1c3e5f7a9b1c3d";
/// A token that can only read.
pub(crate) const READ_ONLY_TOKEN: &str =
    "dop_v1_readonly_8a6c4e2f0b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a";
/// An operator key (`ssh-keygen -l -E md5`: `OPERATOR_KEY_MD5`).
pub(crate) const OPERATOR_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIJ5/QfDr1FPkihNNq4p2RtlqdVkTBE5D2MjaU6HcDzl operator@laptop";
/// Its MD5 fingerprint, as DigitalOcean shows it.
pub(crate) const OPERATOR_KEY_MD5: &str = "40:5b:21:57:6c:01:36:75:f7:07:17:51:a8:ea:a6:55";

/// A fake with the test tokens; `tune` adjusts the rest.
pub(crate) async fn start_fake(tune: impl FnOnce(&mut FakeDigitalOceanConfig)) -> FakeDigitalOcean {
    let mut config = FakeDigitalOceanConfig {
        token: TOKEN.into(),
        read_only_token: Some(READ_ONLY_TOKEN.into()),
        state_step: Duration::from_secs(3),
        ..FakeDigitalOceanConfig::default()
    };
    tune(&mut config);
    FakeDigitalOcean::start(config)
        .await
        .expect("the fake starts")
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

/// A client of `fake` with `token`, DigitalOcean's limiter and quick retries.
pub(crate) fn client(fake: &FakeDigitalOcean, token: &str) -> DigitalOceanProvider {
    client_with(fake, token, Arc::new(RateLimiter::digitalocean()))
}

/// A client of `fake` with `token` and `limiter`.
pub(crate) fn client_with(
    fake: &FakeDigitalOcean,
    token: &str,
    limiter: Arc<RateLimiter>,
) -> DigitalOceanProvider {
    DigitalOceanProvider::new(
        &fake.base_url(),
        SecretString::from(token.to_owned()),
        limiter,
        fast_policy(),
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

/// A create request for `provision` in nyc3.
pub(crate) fn create_request(provision: &str) -> CreateServer {
    CreateServer {
        name: format!("node-{}", provision.replace('_', "-")),
        region: "nyc3".into(),
        size: "s-1vcpu-1gb".into(),
        image: None,
        user_data: "#cloud-config\nwrite_files:\n  - path: /etc/levelrail/agent.env\n    permissions: '0600'\n".into(),
        ssh_public_keys: vec![OPERATOR_KEY.into()],
        ssh_source_cidr: None,
        ownership: ownership(provision),
    }
}

/// `levelrail-provision-<id>`.
pub(crate) fn provision_tag(provision: &str) -> String {
    format!("levelrail-provision-{provision}")
}

/// How many droplets the fake holds per provision tag.
pub(crate) fn droplets_per_provision(fake: &FakeDigitalOcean) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for d in fake.droplets() {
        for t in d
            .tags
            .iter()
            .filter(|t| t.starts_with("levelrail-provision-"))
        {
            *counts.entry(t.clone()).or_insert(0) += 1;
        }
    }
    counts
}

/// The logged requests answered with `status`.
pub(crate) fn answered(log: &[LoggedRequest], status: u16) -> usize {
    log.iter().filter(|r| r.status == Some(status)).count()
}
