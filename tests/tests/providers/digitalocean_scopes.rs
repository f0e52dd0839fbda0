//! DigitalOcean token scopes: the client's list is exactly the `security` scopes of the
//! operations it calls (derived from a recorded lifecycle against the fake, looked up in
//! DigitalOcean's OpenAPI description), the README lists it, the fake checks the same scopes
//! per route, scope first, and the probe names each scope a custom-scoped or read-only
//! token lacks, creating nothing.
use std::collections::BTreeSet;
use std::time::Duration;

use levelrail_clouds::digitalocean::REQUIRED_SCOPES;
use levelrail_clouds::registry::{Access, Grant, GrantContext};
use levelrail_clouds::{CloudProvider as _, PollTarget, ProviderId, ServerState};
use levelrail_sim::fakes::digitalocean::{DESCRIBED_SCOPES, FakeDigitalOcean, ROUTE_SCOPES};
use levelrail_sim::openapi::digitalocean;
use secrecy::SecretString;

use crate::digitalocean_support::{
    READ_ONLY_TOKEN, TOKEN, client, create_request, ownership, start_fake,
};

/// A token holding exactly the documented scopes.
const SCOPED_TOKEN: &str =
    "dop_v1_scoped_5e7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a8a6c4e2f0b1d3f5a7c9e1b3d";
/// The documented scopes but `firewall:create` and `tag:delete`.
const SHORT_TOKEN: &str =
    "dop_v1_short_1c3e5b7d9f1a3c5e7b9d1f3a8a6c4e2f0b1d3f5a7c9e1b3d5e7a9c1e3b5d7f9a";
/// The documented scopes but `droplet:update`.
const NO_UPDATE_TOKEN: &str =
    "dop_v1_noupdate_7b9d1f3a8a6c4e2f0b1d3f5a7c9e1b3d5e7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e";

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
        let no_update: Vec<&str> = REQUIRED_SCOPES
            .iter()
            .copied()
            .filter(|s| *s != "droplet:update")
            .collect();
        c.scoped_tokens = vec![
            (SCOPED_TOKEN.into(), owned(&REQUIRED_SCOPES)),
            (SHORT_TOKEN.into(), owned(&short)),
            (NO_UPDATE_TOKEN.into(), owned(&no_update)),
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
    poll_until_running(&do_, &created.id, "npv_scopes").await;
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
        let template = spec.match_path(&r.path).expect("in the spec");
        for (method, described, scopes) in DESCRIBED_SCOPES {
            if method == r.method && described == template {
                used.extend(owned(scopes));
            }
        }
    }
    assert!(
        fake.request_log().iter().any(|r| r.method == "DELETE"
            && r.path.ends_with("/resources")
            && r.status == Some(204)),
        "the poll that saw the droplet running untagged it"
    );
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
fn the_scopes_the_fake_adds_to_a_security_entry_are_in_the_operations_description() {
    let spec = digitalocean();
    for (method, template, scopes) in DESCRIBED_SCOPES {
        let description = spec.description(method, template).expect("in the spec");
        for scope in scopes {
            assert!(
                description.contains(&format!("`{scope}`")),
                "{method} {template}: {scope} is not in {description:?}"
            );
        }
    }
}

/// Polls `server` until a poll finds it running (the poll that does takes its booting tag
/// off).
async fn poll_until_running(
    do_: &dyn levelrail_clouds::CloudProvider,
    server: &str,
    provision: &str,
) {
    let target = PollTarget {
        server_id: server.to_owned(),
        provision_id: provision.to_owned(),
    };
    for _ in 0..100 {
        let polled = do_
            .poll_servers("cp-test", std::slice::from_ref(&target))
            .await
            .expect("poll");
        if polled
            .iter()
            .any(|s| s.id == server && s.state == ServerState::Running)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the droplet never ran");
}

#[tokio::test]
async fn without_droplet_update_the_probe_names_it_and_droplets_are_read_one_at_a_time() {
    // Arrange
    let fake = scoped_fake().await;
    let do_ = client(&fake, NO_UPDATE_TOKEN);
    let created = do_
        .create_server(&create_request("npv_noupdate"))
        .await
        .expect("create");

    // Act
    let report = do_.probe().await.expect("probe");
    poll_until_running(&do_, &created.id, "npv_noupdate").await;

    // Assert
    assert!(!report.can_write, "{}", report.message);
    assert!(
        report.message.contains("lacks 1 of the scopes")
            && report.message.contains("droplet:update"),
        "{}",
        report.message
    );
    let refused: Vec<String> = fake
        .request_log()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.status == Some(403))
        .map(|r| r.path)
        .collect();
    assert_eq!(
        refused,
        [
            "/v2/tags/levelrail%20write%20probe/resources",
            "/v2/tags/levelrail-booting-cp-test/resources"
        ],
        "the probe's untag and the poll's were refused"
    );
    let droplet = fake.droplets().into_iter().next().expect("the droplet");
    assert!(
        droplet
            .tags
            .contains(&"levelrail-booting-cp-test".to_owned()),
        "the refused untag left the tag: {:?}",
        droplet.tags
    );
    // From then on the poller reads this client's droplets one at a time, not by a tag
    // whose list would keep every droplet.
    assert_eq!(do_.poll_group(&created.id), None);
}

#[tokio::test]
async fn a_refused_untag_is_remembered_for_the_credential_not_for_others() {
    // Arrange: clients built as the control plane builds them, per credential.
    let fake = scoped_fake().await;
    let mut settings = levelrail_clouds::cloud::Settings::default();
    settings
        .set_url(ProviderId::DigitalOcean, "api", fake.base_url())
        .expect("a declared endpoint");
    let clients = levelrail_clouds::clients(&settings);
    let grant = |credential: &str, token: &str| Grant {
        credential_id: credential.into(),
        access: Access::Bearer(SecretString::from(token.to_owned())),
        context: GrantContext::default(),
        expires_at: None,
    };
    let build = |credential: &str, token: &str| {
        clients
            .build(ProviderId::DigitalOcean, &grant(credential, token))
            .expect("a client")
    };
    let first = build("cred-no-update", NO_UPDATE_TOKEN);
    let created = first
        .create_server(&create_request("npv_learned"))
        .await
        .expect("create");

    // Act: the first client's poll is refused its untag.
    poll_until_running(first.as_ref(), &created.id, "npv_learned").await;

    // Assert: the next client of that credential reads one at a time from the start (a
    // poller builds a new client each time it starts); another credential's client lists.
    let again = build("cred-no-update", NO_UPDATE_TOKEN);
    assert_eq!(again.poll_group(&created.id), None);
    let other = build("cred-full", SCOPED_TOKEN);
    assert_eq!(other.poll_group(&created.id), Some(String::new()));
    let untags = fake
        .request_log()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with("/resources"))
        .count();
    assert_eq!(untags, 1, "one refused untag");
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
    // Untagging is checked once tag:delete is granted: until then it is named as not
    // checked, and not listed as granted.
    for report in [&short, &read_only] {
        assert!(
            report
                .message
                .contains("(droplet:update checked once those are granted)"),
            "{}",
            report.message
        );
        let update = report
            .permissions
            .iter()
            .find(|p| p.name == "droplet:update")
            .expect("listed");
        assert!(!update.granted);
    }
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
