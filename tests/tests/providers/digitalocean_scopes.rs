//! DigitalOcean token scopes: the client's list is exactly the `security` scopes of the
//! operations it calls (derived from a recorded lifecycle against the fake, looked up in
//! DigitalOcean's OpenAPI description), the README lists it, the fake checks the same scopes
//! per route, scope first, and the probe names each scope a custom-scoped or read-only
//! token lacks, creating nothing.
use std::collections::BTreeSet;
use std::time::Duration;

use levelrail_clouds::CloudProvider as _;
use levelrail_clouds::digitalocean::REQUIRED_SCOPES;
use levelrail_sim::fakes::digitalocean::{FakeDigitalOcean, ROUTE_SCOPES};
use levelrail_sim::openapi::digitalocean;

use crate::digitalocean_support::{
    READ_ONLY_TOKEN, TOKEN, client, create_request, ownership, start_fake,
};

/// A token holding exactly the documented scopes.
const SCOPED_TOKEN: &str =
    "dop_v1_scoped_5e7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a8a6c4e2f0b1d3f5a7c9e1b3d";
/// The documented scopes but `firewall:create` and `tag:delete`.
const SHORT_TOKEN: &str =
    "dop_v1_short_1c3e5b7d9f1a3c5e7b9d1f3a8a6c4e2f0b1d3f5a7c9e1b3d5e7a9c1e3b5d7f9a";

fn owned(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| (*s).to_owned()).collect()
}

async fn scoped_fake() -> FakeDigitalOcean {
    start_fake(|c| {
        c.state_step = Duration::from_millis(100);
        let short: Vec<&str> = REQUIRED_SCOPES
            .iter()
            .copied()
            .filter(|s| !["firewall:create", "tag:delete"].contains(s))
            .collect();
        c.scoped_tokens = vec![
            (SCOPED_TOKEN.into(), owned(&REQUIRED_SCOPES)),
            (SHORT_TOKEN.into(), owned(&short)),
        ];
    })
    .await
}

#[tokio::test]
async fn the_required_scopes_are_the_spec_scopes_of_every_call_the_client_makes() {
    // Arrange
    let fake = scoped_fake().await;
    let do_ = client(&fake, TOKEN);
    let mut req = create_request("npv_scopes");
    req.ssh_source_cidr = Some("198.51.100.7/32".into());

    // Act: everything a provision does.
    do_.probe().await.expect("probe");
    do_.list_regions().await.expect("regions");
    do_.list_sizes("nyc3").await.expect("sizes");
    let created = do_.create_server(&req).await.expect("create");
    do_.get_server(&created.id).await.expect("get");
    do_.list_servers("cp-test").await.expect("list");
    do_.delete_provision_resources(Some(&created.id), &ownership("npv_scopes"))
        .await
        .expect("delete");

    // Assert
    let spec = digitalocean();
    let mut used = BTreeSet::new();
    for r in fake.request_log() {
        let scopes = spec
            .security_scopes(&r.method, &r.path)
            .unwrap_or_else(|e| panic!("{} {}: {e}", r.method, r.path));
        used.extend(scopes);
    }
    let listed: BTreeSet<String> = owned(&REQUIRED_SCOPES).into_iter().collect();
    assert_eq!(
        used,
        listed,
        "used but not listed: {:?}; listed but not used: {:?}",
        used.difference(&listed).collect::<Vec<_>>(),
        listed.difference(&used).collect::<Vec<_>>()
    );
}

#[test]
fn the_fake_checks_the_spec_scopes_of_every_route() {
    let spec = digitalocean();
    for (method, template, scopes) in ROUTE_SCOPES {
        let want = spec.security_scopes(method, template).expect("in the spec");
        assert_eq!(want, owned(scopes), "{method} {template}");
    }
}

#[test]
fn the_readme_lists_exactly_the_scopes_the_probe_checks() {
    let listed = crate::readme::text_block("### DigitalOcean token scopes");
    assert_eq!(listed, REQUIRED_SCOPES);
}

#[tokio::test]
async fn a_token_with_exactly_the_documented_scopes_passes_the_probe_and_provisions() {
    let fake = scoped_fake().await;
    let do_ = client(&fake, SCOPED_TOKEN);

    let report = do_.probe().await.expect("probe");
    let created = do_
        .create_server(&create_request("npv_scoped"))
        .await
        .expect("create");
    do_.delete_provision_resources(Some(&created.id), &ownership("npv_scoped"))
        .await
        .expect("delete");

    assert!(report.can_write, "{}", report.message);
    assert!(fake.droplets().is_empty() && fake.firewalls().is_empty());
    // The scope is checked first: the probe's empty create earned DigitalOcean's 422.
    let first_create = fake
        .request_log()
        .into_iter()
        .find(|r| r.method == "POST" && r.path == "/v2/droplets")
        .expect("probed");
    assert_eq!(first_create.status, Some(422));
}

#[tokio::test]
async fn a_missing_scope_is_named_by_the_probe_which_creates_nothing() {
    let fake = scoped_fake().await;

    let short = client(&fake, SHORT_TOKEN).probe().await.expect("probe");
    let read_only = client(&fake, READ_ONLY_TOKEN).probe().await.expect("probe");

    assert!(!short.can_write, "{}", short.message);
    assert!(
        short.message.contains("lacks 2 of the scopes")
            && short.message.contains("firewall:create, tag:delete"),
        "{}",
        short.message
    );
    assert!(!read_only.can_write, "{}", read_only.message);
    for scope in REQUIRED_SCOPES.iter().filter(|s| !s.ends_with(":read")) {
        assert!(read_only.message.contains(scope), "{}", read_only.message);
    }
    assert!(
        !read_only.message.contains("read-only"),
        "{}",
        read_only.message
    );
    assert!(
        fake.droplets().is_empty()
            && fake.firewalls().is_empty()
            && fake.keys().is_empty()
            && fake.tags().is_empty(),
        "the probe created nothing"
    );
    let refused: Vec<(String, String)> = fake
        .request_log()
        .into_iter()
        .filter(|r| r.status == Some(403))
        .map(|r| (r.method, r.path))
        .collect();
    assert!(
        refused.contains(&("POST".into(), "/v2/firewalls".into()))
            && refused.contains(&("DELETE".into(), "/v2/tags/levelrail%20write%20probe".into())),
        "{refused:?}"
    );
}
