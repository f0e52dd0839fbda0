//! Contract: a whole provision lifecycle (probe, catalog, create, status, poll, list, delete, and
//! the error answers on the way) between the DigitalOcean client and its fake, with every
//! request body the client sent and every answer the fake gave checked against DigitalOcean's
//! own OpenAPI description (`tests/specs/digitalocean-public.v2.bundled.json`). On a paused
//! clock: the injected 429 makes the client's limiter hold every later request back.
//!
//! Schema gaps allowed, and why:
//! - Statuses an operation does not list (422 on `POST /v2/droplets`, 403 on `POST /v2/tags`
//!   with a read-only token, 503 from an injected fault) are checked against its `default` response, the `error`
//!   schema, which is how DigitalOcean documents them.
//! - The capability probe sends an invalid tag name on purpose (`levelrail write probe`): the
//!   400 it earns proves the `tag:create` scope without creating anything. Its body still
//!   matches the `tags` schema apart from `pattern`. Likewise it sends an empty body (`{}`)
//!   to `POST /v2/droplets`, `/v2/firewalls` and `/v2/account/keys`: the 400 or 422 (or the
//!   403 without the scope) proves the create scope; those bodies are not checked, their
//!   answers are.
//! - The validator ignores `pattern` and `format`, so the patterns that matter here are
//!   checked by this test itself: tag names `^[a-zA-Z0-9_\-\:]+$` (≤ 255), the firewall name
//!   `^[a-zA-Z0-9][a-zA-Z0-9\.-]+$` and the droplet name
//!   `^[a-zA-Z0-9]?[a-z0-9A-Z.\-]*[a-z0-9A-Z]$`.
//! - Answers the fake cut off on purpose (a dropped connection) have no body to check; the
//!   validator ignores headers (`ratelimit-*`, `Retry-After`), which other tests check.
use std::time::Duration;

use levelrail_clouds::{CloudProvider, ErrorKind, PollTarget};
use levelrail_sim::fakes::Fault;
use levelrail_sim::fakes::digitalocean::LoggedRequest;
use levelrail_sim::openapi::digitalocean;
use serde_json::Value;

use crate::digitalocean_support::{
    READ_ONLY_TOKEN, TOKEN, client, create_request, ownership, start_fake,
};

#[tokio::test(start_paused = true)]
async fn every_request_and_answer_of_a_provision_lifecycle_matches_the_digitalocean_spec() {
    let fake = start_fake(|c| {
        c.state_step = Duration::from_millis(200);
        c.page_size_cap = 5;
    })
    .await;
    let do_ = client(&fake, TOKEN);

    // Arrange + act: everything a provision does, plus the error answers the client meets.
    fake.faults().inject(
        Some("GET"),
        "/v2/account",
        1,
        Fault::RateLimited {
            retry_after_secs: 1,
        },
    );
    fake.faults()
        .inject(Some("GET"), "/v2/regions", 1, Fault::InternalError);
    fake.faults()
        .inject(Some("GET"), "/v2/sizes", 1, Fault::Unavailable);
    assert!(do_.probe().await.expect("probe").can_write);
    assert!(
        !client(&fake, READ_ONLY_TOKEN)
            .probe()
            .await
            .expect("read-only probe")
            .can_write
    );
    assert!(do_.list_regions().await.expect("regions").len() > 5);
    assert!(!do_.list_sizes("nyc3").await.expect("sizes").is_empty());
    let mut req = create_request("npv_contract");
    req.ssh_source_cidr = Some("198.51.100.7/32".into());
    let created = do_.create_server(&req).await.expect("create");
    do_.create_server(&req).await.expect("create again adopts");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        do_.get_server(&created.id)
            .await
            .expect("get")
            .ipv4
            .is_some()
    );
    let target = PollTarget {
        server_id: created.id.clone(),
        provision_id: "npv_contract".into(),
    };
    let polled = do_
        .poll_servers("cp-test", std::slice::from_ref(&target))
        .await
        .expect("poll");
    assert!(
        polled.len() == 1 && polled[0].ipv4.is_some(),
        "the poll reads the running droplet (and untags it): {polled:?}"
    );
    assert_eq!(do_.list_servers("cp-test").await.expect("list").len(), 1);
    let mut no_capacity = create_request("npv_nocap");
    no_capacity.region = "syd1".into();
    no_capacity.size = "c-2".into();
    assert_eq!(
        do_.create_server(&no_capacity).await.unwrap_err().kind,
        ErrorKind::CapacityUnavailable
    );
    do_.delete_provision_resources(Some(&created.id), &ownership("npv_contract"))
        .await
        .expect("delete");
    do_.delete_provision_resources(None, &ownership("npv_nocap"))
        .await
        .expect("delete what never existed");
    assert_eq!(
        do_.get_server(&created.id).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        client(&fake, "dop_v1_wrong")
            .list_regions()
            .await
            .unwrap_err()
            .kind,
        ErrorKind::Unauthorized
    );

    // Assert: every exchange matches the description.
    let log = fake.request_log();
    let spec = digitalocean();
    let mut problems = Vec::new();
    for r in &log {
        let what = format!("{} {}", r.method, r.path_and_query());
        let probe = r.body == serde_json::json!({}) && matches!(r.status, Some(400 | 403 | 422));
        if !probe && let Err(errs) = spec.validate_request(&r.method, &r.path_and_query(), &r.body)
        {
            problems.push(format!("request {what}: {errs:?}"));
        }
        if let Some(status) = r.status
            && let Err(errs) = spec.validate_response(&r.method, &r.path, status, &r.response)
        {
            problems.push(format!("answer {status} to {what}: {errs:?}"));
        }
        if !probe {
            problems.extend(pattern_problems(r));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} exchanges break the spec:\n{}",
        problems.len(),
        log.len(),
        problems.join("\n")
    );
    // The check has teeth: a droplet answer without its networks, or a create with a numeric
    // region, is refused.
    let create = log
        .iter()
        .find(|r| r.method == "POST" && r.path == "/v2/droplets" && r.status == Some(202))
        .unwrap();
    let mut broken = create.response.clone();
    broken["droplet"]
        .as_object_mut()
        .unwrap()
        .remove("networks");
    assert!(
        spec.validate_response("POST", "/v2/droplets", 202, &broken)
            .is_err()
    );
    let mut broken = create.body.clone();
    broken["region"] = serde_json::json!(3);
    assert!(
        spec.validate_request("POST", "/v2/droplets", &broken)
            .is_err()
    );
    for (method, path) in [
        ("GET", "/v2/account"),
        ("POST", "/v2/tags"),
        ("GET", "/v2/regions"),
        ("GET", "/v2/sizes"),
        ("GET", "/v2/account/keys"),
        ("POST", "/v2/account/keys"),
        ("POST", "/v2/droplets"),
        ("POST", "/v2/firewalls"),
        ("GET", "/v2/droplets"),
        ("DELETE", "/v2/firewalls/"),
        ("DELETE", "/v2/account/keys/"),
        ("DELETE", "/v2/droplets/"),
        ("DELETE", "/v2/tags/"),
        ("DELETE", "/v2/tags/levelrail-booting-cp-test/resources"),
    ] {
        assert!(
            log.iter()
                .any(|r| r.method == method && r.path.starts_with(path)),
            "the lifecycle exercised {method} {path}"
        );
    }
    let statuses: Vec<u16> = log.iter().filter_map(|r| r.status).collect();
    for status in [200, 201, 202, 204, 400, 401, 403, 404, 422, 429, 500, 503] {
        assert!(
            statuses.contains(&status),
            "an answer with status {status} was checked"
        );
    }
}

/// The `pattern`s the validator does not check, for the values Levelrail chooses.
fn pattern_problems(r: &LoggedRequest) -> Vec<String> {
    let mut problems = Vec::new();
    let tag_ok = |t: &str| {
        !t.is_empty()
            && t.len() <= 255
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-:".contains(c))
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/v2/droplets") => {
            let name = r.body["name"].as_str().unwrap_or_default();
            let name_ok = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
                && name
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric());
            if !name_ok {
                problems.push(format!("droplet name {name:?} breaks the pattern"));
            }
            problems.extend(
                strings(&r.body["tags"])
                    .into_iter()
                    .filter(|t| !tag_ok(t))
                    .map(|t| format!("tag {t:?}")),
            );
        }
        ("POST", "/v2/firewalls") => {
            let name = r.body["name"].as_str().unwrap_or_default();
            let mut chars = name.chars();
            let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
                && name.len() >= 2
                && chars.all(|c| c.is_ascii_alphanumeric() || ".-".contains(c));
            if !ok {
                problems.push(format!("firewall name {name:?} breaks the pattern"));
            }
        }
        _ => {}
    }
    if r.path == "/v2/droplets" && r.query.contains("tag_name=") {
        let tag = r
            .query
            .split('&')
            .find_map(|p| p.strip_prefix("tag_name="))
            .unwrap_or_default();
        if !tag_ok(tag) {
            problems.push(format!("listed tag {tag:?}"));
        }
    }
    problems
}
