//! The DigitalOcean client over its fake: status mapping, idempotent create with key upload
//! and a closed firewall made before the droplet, not-found and unauthorized answers, cleanup on delete, listing by
//! control plane and the capability probe.
use std::time::Duration;

use levelrail_clouds::{CloudProvider, ErrorKind, PollTarget, ServerState};
use levelrail_sim::fakes::Fault;

use crate::digitalocean_support::{
    OPERATOR_KEY_MD5, READ_ONLY_TOKEN, TOKEN, client, create_request, droplets_per_provision,
    ownership, provision_tag, start_fake,
};

#[tokio::test]
async fn a_droplet_is_pending_while_new_then_running_with_its_public_ipv4() {
    let fake = start_fake(|c| c.state_step = Duration::from_millis(300)).await;
    let do_ = client(&fake, TOKEN);

    let created = do_
        .create_server(&create_request("npv_state"))
        .await
        .expect("create");
    assert_eq!(
        (
            created.state,
            created.provider_state.as_str(),
            created.ipv4.as_deref()
        ),
        (ServerState::Pending, "new", None)
    );
    assert_eq!(created.provision_id.as_deref(), Some("npv_state"));

    tokio::time::sleep(Duration::from_millis(450)).await;
    let running = do_.get_server(&created.id).await.expect("get");
    assert_eq!(
        (running.state, running.provider_state.as_str()),
        (ServerState::Running, "active")
    );
    let ip = running.ipv4.expect("a public IPv4 once active");
    assert!(
        ip.starts_with("198.18."),
        "the public address, not the private one: {ip}"
    );

    for (status, want) in [
        ("off", ServerState::Failed),
        ("archive", ServerState::Failed),
    ] {
        let id: u64 = created.id.parse().unwrap();
        assert!(fake.set_droplet_status(id, status));
        let info = do_.get_server(&created.id).await.expect("get");
        assert_eq!((info.state, info.provider_state.as_str()), (want, status));
    }
}

#[tokio::test]
async fn create_tags_the_droplet_uploads_the_operator_key_and_attaches_a_firewall_with_no_inbound_rule()
 {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);

    let created = do_
        .create_server(&create_request("npv_fw"))
        .await
        .expect("create");

    let droplets = fake.droplets();
    assert_eq!(droplets.len(), 1);
    let d = &droplets[0];
    assert_eq!(d.id.to_string(), created.id);
    assert_eq!(
        d.tags,
        [
            "levelrail",
            "levelrail-cp-cp-test",
            "levelrail-provision-npv_fw",
            "levelrail-booting-cp-test"
        ]
    );
    assert_eq!(
        (d.image.as_str(), d.region.as_str(), d.size.as_str()),
        ("ubuntu-24-04-x64", "nyc3", "s-1vcpu-1gb")
    );
    assert!(d.user_data.starts_with("#cloud-config\n"));
    let keys = fake.keys();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        (keys[0].name.as_str(), keys[0].fingerprint.as_str()),
        ("levelrail-npv_fw-key-0", OPERATOR_KEY_MD5)
    );
    assert_eq!(
        d.ssh_key_ids,
        [keys[0].id],
        "the droplet embeds the uploaded key, so no root password is e-mailed"
    );
    let firewalls = fake.firewalls();
    assert_eq!(firewalls.len(), 1);
    let fw = &firewalls[0];
    assert_eq!(fw.name, "levelrail-npv-fw");
    assert!(
        fw.inbound_rules.is_empty(),
        "no inbound rule: {:?}",
        fw.inbound_rules
    );
    assert_eq!(fw.outbound_rules.len(), 3);
    assert_eq!(fw.tags, [provision_tag("npv_fw")]);
    let create_body = fake
        .request_log()
        .into_iter()
        .find(|r| r.method == "POST" && r.path == "/v2/droplets")
        .unwrap()
        .body;
    assert_eq!(create_body["monitoring"], false);
}

#[tokio::test]
async fn a_repeated_create_adopts_the_droplet_instead_of_creating_another() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let mut req = create_request("npv_again");
    req.image = Some("debian-12-x64".into());

    let first = do_.create_server(&req).await.expect("first create");
    let second = do_.create_server(&req).await.expect("second create");

    assert_eq!(first.id, second.id);
    assert_eq!(fake.droplets().len(), 1);
    assert_eq!(fake.droplets()[0].image, "debian-12-x64");
    assert_eq!((fake.firewalls().len(), fake.keys().len()), (1, 1));
    let creates = fake
        .request_log()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/v2/droplets")
        .count();
    assert_eq!(creates, 1);
}

#[tokio::test]
async fn ssh_is_opened_to_the_given_source_only() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let mut req = create_request("npv_ssh");
    req.ssh_source_cidr = Some("203.0.113.0/24".into());

    do_.create_server(&req).await.expect("create");

    let fw = &fake.firewalls()[0];
    assert_eq!(
        fw.inbound_rules,
        [
            serde_json::json!({"protocol": "tcp", "ports": "22", "sources": {"addresses": ["203.0.113.0/24"]}})
        ]
    );
    req.ssh_source_cidr = Some("anywhere".into());
    assert_eq!(
        do_.create_server(&req).await.unwrap_err().kind,
        ErrorKind::InvalidRequest
    );
}

#[tokio::test]
async fn getting_a_droplet_that_does_not_exist_is_not_found() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);

    let missing = do_.get_server("999999").await.unwrap_err();
    assert_eq!(
        (missing.kind, missing.status, missing.code.as_str()),
        (ErrorKind::NotFound, Some(404), "not_found")
    );
    let malformed = do_.get_server("../account").await.unwrap_err();
    assert_eq!(malformed.kind, ErrorKind::NotFound);
    assert!(
        fake.request_log().iter().all(|r| !r.path.contains("..")),
        "a malformed id never reaches a path"
    );
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_and_the_error_never_shows_a_token() {
    let fake = start_fake(|_| {}).await;
    let wrong = "dop_v1_wrong0000000000000000000000000000000000000000000000000000000";
    let do_ = client(&fake, wrong);

    for err in [
        do_.list_regions().await.unwrap_err(),
        do_.create_server(&create_request("npv_u"))
            .await
            .unwrap_err(),
    ] {
        assert_eq!((err.kind, err.status), (ErrorKind::Unauthorized, Some(401)));
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(wrong) && !shown.contains(TOKEN), "{shown}");
        assert!(shown.contains("Unable to authenticate you"), "{shown}");
    }
    assert!(fake.droplets().is_empty());
}

#[tokio::test]
async fn delete_removes_the_droplet_its_firewall_its_keys_and_its_tag_and_can_be_repeated() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let kept = do_
        .create_server(&create_request("npv_keep"))
        .await
        .expect("create kept");
    let mut req = create_request("npv_del");
    req.ssh_public_keys.push(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDBxkogaBiUnqSR/X4zYjC3C0ns4hVphe5GtG+dEpa5O second"
            .into(),
    );
    let doomed = do_.create_server(&req).await.expect("create doomed");
    assert_eq!(
        fake.keys().len(),
        2,
        "the first key is reused from npv_keep, the second uploaded"
    );

    do_.delete_provision_resources(Some(&doomed.id), &ownership("npv_del"))
        .await
        .expect("delete");
    do_.delete_provision_resources(Some(&doomed.id), &ownership("npv_del"))
        .await
        .expect("deleting again succeeds");

    let ids: Vec<String> = fake.droplets().iter().map(|d| d.id.to_string()).collect();
    assert_eq!(ids, std::slice::from_ref(&kept.id));
    let firewalls: Vec<String> = fake.firewalls().into_iter().map(|f| f.name).collect();
    assert_eq!(firewalls, ["levelrail-npv-keep"]);
    let keys: Vec<String> = fake.keys().into_iter().map(|k| k.name).collect();
    assert_eq!(
        keys,
        ["levelrail-npv_keep-key-0"],
        "a key another provision uploaded stays"
    );
    assert!(!fake.tags().contains(&provision_tag("npv_del")));
    assert_eq!(
        do_.get_server(&doomed.id).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn delete_by_ownership_alone_cleans_up_a_create_whose_answer_was_lost() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    // The create was processed but its answer dropped: the retry adopts the droplet, and a
    // caller that never recorded it (a crash) cleans up by the provision tag alone.
    fake.faults()
        .inject(Some("POST"), "/v2/droplets", 1, Fault::ProcessThenDrop);
    do_.create_server(&create_request("npv_lost"))
        .await
        .expect("the retry adopts the droplet");
    assert_eq!(
        droplets_per_provision(&fake).get(&provision_tag("npv_lost")),
        Some(&1)
    );

    do_.delete_provision_resources(None, &ownership("npv_lost"))
        .await
        .expect("delete by provision tag");

    assert!(fake.droplets().is_empty() && fake.firewalls().is_empty() && fake.keys().is_empty());
}

#[tokio::test]
async fn the_firewall_exists_before_the_droplet_and_without_it_no_droplet_is_made() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    do_.create_server(&create_request("npv_first"))
        .await
        .expect("create");
    let log = fake.request_log();
    let at = |method: &str, path: &str| {
        log.iter()
            .position(|r| r.method == method && r.path == path)
            .unwrap_or_else(|| panic!("no {method} {path}"))
    };
    assert!(
        at("POST", "/v2/tags") < at("POST", "/v2/firewalls")
            && at("POST", "/v2/firewalls") < at("POST", "/v2/droplets"),
        "tag, then firewall by tag, then droplet: {:?}",
        log.iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );

    fake.faults()
        .inject(Some("GET"), "/v2/firewalls", 10, Fault::Unavailable);
    let err = do_
        .create_server(&create_request("npv_nofw"))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");
    assert_eq!(
        droplets_per_provision(&fake).get(&provision_tag("npv_nofw")),
        None,
        "no droplet without its firewall"
    );
}

#[tokio::test]
async fn list_servers_returns_the_droplets_of_this_control_plane_only() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let ours = do_
        .create_server(&create_request("npv_a"))
        .await
        .expect("create a");
    let mut other = create_request("npv_b");
    other.ownership.control_plane = "cp-other".into();
    do_.create_server(&other).await.expect("create b");

    let listed = do_.list_servers("cp-test").await.expect("list");

    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].id.as_str(), listed[0].provision_id.as_deref()),
        (ours.id.as_str(), Some("npv_a"))
    );
}

#[tokio::test]
async fn a_poll_lists_the_booting_tag_and_takes_it_off_the_droplets_running_with_an_address() {
    // Arrange: two droplets of this control plane polled, one not (another replica's), and
    // one of another control plane; each is new for 5 s.
    let fake = start_fake(|c| c.state_step = Duration::from_secs(5)).await;
    let do_ = client(&fake, TOKEN);
    let mut targets = Vec::new();
    for provision in ["npv_pa", "npv_pb"] {
        let created = do_
            .create_server(&create_request(provision))
            .await
            .expect("create");
        targets.push(PollTarget {
            server_id: created.id,
            provision_id: provision.into(),
        });
    }
    let mut other = create_request("npv_pc");
    other.ownership.control_plane = "cp-other".into();
    do_.create_server(&other).await.expect("create c");
    let not_polled = do_
        .create_server(&create_request("npv_pd"))
        .await
        .expect("create d");
    let before = fake.request_log().len();

    // Act: a poll while they are new, one once they run, one after.
    let booting = do_.poll_servers("cp-test", &targets).await.expect("poll");
    tokio::time::sleep(Duration::from_millis(5500)).await;
    let running = do_.poll_servers("cp-test", &targets).await.expect("poll");
    let after = do_.poll_servers("cp-test", &targets).await.expect("poll");

    // Assert
    let ids = |servers: &[levelrail_clouds::ServerInfo]| {
        let mut ids: Vec<String> = servers.iter().map(|s| s.id.clone()).collect();
        ids.sort();
        ids
    };
    let mut wanted: Vec<String> = targets.iter().map(|t| t.server_id.clone()).collect();
    wanted.sort();
    let mut listed = wanted.clone();
    listed.push(not_polled.id.clone());
    listed.sort();
    assert_eq!(
        ids(&booting),
        listed,
        "the booting droplets of this control plane"
    );
    assert!(booting.iter().all(|s| s.state == ServerState::Pending));
    assert_eq!(ids(&running), listed);
    assert!(
        running
            .iter()
            .all(|s| s.state == ServerState::Running && s.ipv4.is_some()),
        "{running:?}"
    );
    assert_eq!(
        ids(&after),
        std::slice::from_ref(&not_polled.id),
        "the polled ones untagged once running, the other left for its own poller"
    );
    let calls: Vec<(String, String, String)> = fake.request_log()[before..]
        .iter()
        .map(|r| (r.method.clone(), r.path.clone(), r.query.clone()))
        .collect();
    let list = (
        "GET".to_owned(),
        "/v2/droplets".to_owned(),
        "tag_name=levelrail-booting-cp-test&per_page=200".to_owned(),
    );
    let untag = (
        "DELETE".to_owned(),
        "/v2/tags/levelrail-booting-cp-test/resources".to_owned(),
        String::new(),
    );
    assert_eq!(
        calls,
        [list.clone(), list.clone(), untag, list],
        "one list call per poll, one untag for all that booted"
    );
    let untagged = fake
        .request_log()
        .into_iter()
        .find(|r| r.method == "DELETE")
        .expect("untagged");
    assert_eq!(untagged.status, Some(204));
    let mut resources: Vec<(String, String)> = untagged.body["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["resource_id"].as_str().unwrap_or_default().to_owned(),
                r["resource_type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    resources.sort();
    let droplet = |id: &String| (id.clone(), "droplet".to_owned());
    assert_eq!(resources, wanted.iter().map(droplet).collect::<Vec<_>>());
    for d in fake.droplets() {
        let polled = wanted.contains(&d.id.to_string());
        assert_eq!(
            d.tags.iter().any(|t| t.starts_with("levelrail-booting-")),
            !polled,
            "only the polled droplets lost their booting tag: {:?}",
            d.tags
        );
        assert!(
            d.tags.iter().any(|t| t.starts_with("levelrail-provision-"))
                && d.tags.iter().any(|t| t.starts_with("levelrail-cp-"))
        );
    }
}

#[tokio::test]
async fn a_capacity_shortage_is_classified_and_leaves_no_droplet() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    fake.faults()
        .inject(Some("POST"), "/v2/droplets", 1, Fault::Capacity);

    let err = do_
        .create_server(&create_request("npv_cap"))
        .await
        .unwrap_err();

    assert_eq!(
        (err.kind, err.status, err.code.as_str()),
        (
            ErrorKind::CapacityUnavailable,
            Some(422),
            "unprocessable_entity"
        )
    );
    assert!(
        err.message.contains("currently unavailable"),
        "{}",
        err.message
    );
    assert!(fake.droplets().is_empty());
    let mut wrong_size = create_request("npv_size");
    wrong_size.size = "m-2vcpu-16gb".into();
    wrong_size.region = "syd1".into();
    assert_eq!(
        do_.create_server(&wrong_size).await.unwrap_err().kind,
        ErrorKind::CapacityUnavailable
    );
}

#[tokio::test]
async fn the_probe_proves_write_access_without_creating_anything() {
    let fake = start_fake(|_| {}).await;

    let full = client(&fake, TOKEN).probe().await.expect("probe");
    let read_only = client(&fake, READ_ONLY_TOKEN).probe().await.expect("probe");

    assert!(full.can_write, "{}", full.message);
    assert!(!read_only.can_write, "{}", read_only.message);
    assert!(
        full.account.contains("Levelrail Fake Team"),
        "{}",
        full.account
    );
    assert!(
        read_only.message.contains("droplet:create"),
        "the missing scopes are named: {}",
        read_only.message
    );
    assert!(
        fake.tags().is_empty() && fake.droplets().is_empty(),
        "the probe created nothing"
    );
    let statuses: Vec<Option<u16>> = fake
        .request_log()
        .iter()
        .filter(|r| r.path == "/v2/tags")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [Some(400), Some(403)]);
}

#[tokio::test(start_paused = true)]
async fn a_create_that_timed_out_is_listed_before_it_is_retried_and_never_doubles() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    // The fake stalls past the client's 5 s timeout; the client gives up on that request.
    fake.faults().inject(
        Some("POST"),
        "/v2/droplets",
        1,
        Fault::Delay(Duration::from_secs(10)),
    );

    let created = do_
        .create_server(&create_request("npv_slow"))
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_secs(30)).await;

    assert_eq!(
        droplets_per_provision(&fake).get(&provision_tag("npv_slow")),
        Some(&1)
    );
    assert_eq!(fake.droplets()[0].id.to_string(), created.id);
    let log = fake.request_log();
    let calls: Vec<String> = log
        .iter()
        .filter(|r| r.path == "/v2/droplets")
        .map(|r| format!("{} {:?}", r.method, r.status))
        .collect();
    assert_eq!(
        calls,
        [
            "GET Some(200)",
            "POST None",
            "GET Some(200)",
            "POST Some(202)"
        ],
        "list, create (lost), list, create"
    );
}

#[tokio::test]
async fn without_operator_keys_a_lock_key_is_embedded_so_no_root_password_is_set() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);
    let mut req = create_request("npv_nokey");
    req.ssh_public_keys.clear();

    let created = do_.create_server(&req).await.expect("create");
    do_.create_server(&req).await.expect("create again");

    let keys = fake.keys();
    assert_eq!(keys.len(), 1, "one lock key, reused by the repeated create");
    assert_eq!(keys[0].name, "levelrail-npv_nokey-key-lock");
    assert!(keys[0].public_key.starts_with("ssh-ed25519 "));
    assert_eq!(fake.droplets()[0].ssh_key_ids, [keys[0].id]);
    do_.delete_provision_resources(Some(&created.id), &ownership("npv_nokey"))
        .await
        .expect("delete");
    assert!(fake.keys().is_empty());
}
