//! The Hetzner client's behaviour against the fake: catalog and prices per location, status
//! mapping, errors, paging, idempotent create and adoption, cleanup on delete, and the
//! write-capability probe.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use levelrail_clouds::hetzner::ACCOUNT;
use levelrail_clouds::{CloudProvider as _, ErrorKind, ServerState};
use levelrail_sim::fakes::{BootEvent, BootHook, Fault};

use crate::hetzner_support::{
    TOKEN, client, count, create_request, operator_key, ownership, start_fake, wait_running,
};

#[tokio::test]
async fn the_price_shown_is_the_selected_locations_and_unsold_or_deprecated_types_are_hidden() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);

    let fsn1 = hetzner.list_sizes("fsn1").await.expect("fsn1 sizes");
    let ash = hetzner.list_sizes("ash").await.expect("ash sizes");
    let hel1 = hetzner.list_sizes("hel1").await.expect("hel1 sizes");

    let price = |sizes: &[levelrail_clouds::Size], id: &str| {
        sizes
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.pricing.price().map(|p| p.monthly.clone()))
    };
    assert_eq!(price(&fsn1, "ccx13").as_deref(), Some("14.8631"));
    assert_eq!(price(&ash, "ccx13").as_deref(), Some("17.8381"));
    assert_eq!(price(&fsn1, "cx22").as_deref(), Some("4.5101"));
    assert_eq!(price(&ash, "cx22"), None, "cx22 is not sold in Ashburn");
    assert!(
        fsn1.iter().all(|s| s.id != "cpx11"),
        "deprecated everywhere"
    );
    assert!(
        fsn1.iter().any(|s| s.id == "cpx21") && hel1.iter().all(|s| s.id != "cpx21"),
        "deprecated in hel1 only"
    );
    let cx22 = fsn1.iter().find(|s| s.id == "cx22").expect("cx22");
    assert_eq!(
        (
            cx22.vcpus,
            cx22.memory_mb,
            cx22.disk_gb,
            cx22.pricing.price().map(|p| p.currency.as_str())
        ),
        (2, 4096, 40, Some("EUR"))
    );
}

#[tokio::test(start_paused = true)]
async fn statuses_map_from_initializing_to_running_and_off_is_failed() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);

    let created = hetzner
        .create_server(&create_request("web-1", "npv_status"))
        .await
        .expect("create");
    assert_eq!(
        (created.state, created.provider_state.as_str()),
        (ServerState::Pending, "initializing")
    );
    assert_eq!(created.provision_id.as_deref(), Some("npv_status"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let starting = hetzner.get_server(&created.id).await.expect("get");
    assert_eq!(
        (starting.state, starting.provider_state.as_str()),
        (ServerState::Pending, "starting")
    );
    let running = wait_running(&hetzner, &created.id).await;
    assert_eq!(
        running.ipv4.as_deref(),
        Some(fake.servers()[0].ipv4.as_str())
    );
    fake.set_server_status(created.id.parse().expect("numeric id"), "off");
    assert_eq!(
        hetzner.get_server(&created.id).await.expect("get").state,
        ServerState::Failed
    );
}

#[tokio::test]
async fn a_missing_server_is_not_found_and_a_wrong_token_is_unauthorized_without_echoing_it() {
    let fake = start_fake(|_| {}).await;
    let wrong = "hcloud-wrong-token-0123456789abcdef";

    let missing = client(&fake, TOKEN)
        .get_server("424242")
        .await
        .expect_err("missing");
    let refused = client(&fake, wrong)
        .list_regions()
        .await
        .expect_err("refused");

    assert_eq!(missing.kind, ErrorKind::NotFound);
    assert_eq!(
        (refused.kind, refused.code.as_str(), refused.status),
        (ErrorKind::Unauthorized, "unauthorized", Some(401))
    );
    let shown = format!("{refused} {refused:?}");
    assert!(!shown.contains(wrong) && !shown.contains(TOKEN), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn lists_follow_every_page() {
    let fake = start_fake(|c| c.max_per_page = 2).await;
    let hetzner = client(&fake, TOKEN);
    for i in 0..5 {
        hetzner
            .create_server(&create_request(
                &format!("web-{i}"),
                &format!("npv_page{i}"),
            ))
            .await
            .expect("create");
    }

    let servers = hetzner.list_servers("cp-test").await.expect("list");
    let regions = hetzner.list_regions().await.expect("regions");

    assert_eq!(servers.len(), 5);
    assert_eq!(regions.len(), 6);
    assert!(
        fake.request_log()
            .iter()
            .any(|r| r.path.starts_with("/servers?") && r.path.contains("page=3"))
    );
    assert!(
        hetzner
            .list_servers("another-cp")
            .await
            .expect("list")
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn creating_twice_returns_the_same_server_and_a_lost_answer_is_adopted() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);
    let req = create_request("web-1", "npv_again");

    let first = hetzner.create_server(&req).await.expect("create");
    let again = hetzner.create_server(&req).await.expect("create again");
    fake.faults()
        .inject(Some("POST"), "/servers", 1, Fault::ProcessThenDrop);
    let lost = hetzner
        .create_server(&create_request("web-2", "npv_lost"))
        .await
        .expect("adopted after a lost answer");

    assert_eq!(first.id, again.id);
    assert_eq!(fake.servers().len(), 2);
    assert_eq!(
        fake.create_count_by_label("levelrail-provision", "npv_lost"),
        1
    );
    assert_eq!(lost.provision_id.as_deref(), Some("npv_lost"));
    assert_eq!(
        count(&fake.request_log(), "POST", "/servers"),
        2,
        "the lost create was looked up, not re-sent"
    );
}

#[tokio::test(start_paused = true)]
async fn a_5xx_create_is_looked_up_then_sent_once_more_and_a_foreign_name_is_refused() {
    let fake = start_fake(|_| {}).await;
    let hetzner = client(&fake, TOKEN);
    fake.faults()
        .inject(Some("POST"), "/servers", 1, Fault::InternalError);

    let created = hetzner
        .create_server(&create_request("web-1", "npv_5xx"))
        .await
        .expect("second attempt");
    let taken = hetzner
        .create_server(&create_request("web-1", "npv_other"))
        .await
        .expect_err("name taken");

    let creates: Vec<_> = fake
        .request_log()
        .into_iter()
        .filter(|r| r.path.starts_with("/servers"))
        .map(|r| (r.method, r.status))
        .collect();
    let first_post = creates
        .iter()
        .position(|(m, _)| m == "POST")
        .expect("a create");
    assert_eq!(
        &creates[first_post..first_post + 3],
        &[
            ("POST".into(), Some(500)),
            ("GET".into(), Some(200)),
            ("POST".into(), Some(201))
        ]
    );
    assert_eq!(created.provision_id.as_deref(), Some("npv_5xx"));
    assert_eq!(
        (taken.kind, taken.code.as_str()),
        (ErrorKind::InvalidRequest, "uniqueness_error")
    );
    assert!(
        taken.message.contains("did not create"),
        "{}",
        taken.message
    );
    assert_eq!(fake.servers().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn delete_removes_the_server_then_its_firewall_and_keys_and_identical_keys_are_reused() {
    let fake = start_fake(|c| c.state_step = Duration::from_secs(3)).await;
    let hetzner = client(&fake, TOKEN);
    let mut req = create_request("web-1", "npv_delete");
    req.ssh_public_keys = vec![operator_key(1), operator_key(2)];
    let created = hetzner.create_server(&req).await.expect("create");
    let mut reuse = create_request("web-2", "npv_reuse");
    reuse.ssh_public_keys = vec![operator_key(2)];
    hetzner
        .create_server(&reuse)
        .await
        .expect("create reusing a key");
    assert_eq!(
        fake.ssh_keys().len(),
        2,
        "the identical key was reused, not uploaded again"
    );

    hetzner
        .delete_provision_resources(Some(&created.id), &ownership("npv_delete"))
        .await
        .expect("delete");
    hetzner
        .delete_provision_resources(Some(&created.id), &ownership("npv_delete"))
        .await
        .expect("deleting again succeeds");

    let log = fake.request_log();
    assert!(
        log.iter().any(|r| r.method == "DELETE"
            && r.path.starts_with("/firewalls/")
            && r.status == Some(422)),
        "waited out resource_in_use"
    );
    assert_eq!(
        fake.servers()
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["web-2"]
    );
    assert_eq!(fake.firewalls().len(), 1, "only web-2's firewall is left");
    assert!(
        fake.ssh_keys().is_empty(),
        "both keys carried npv_delete's label"
    );
}

#[tokio::test]
async fn the_probe_proves_write_access_without_creating_anything() {
    let writable = start_fake(|_| {}).await;
    let read_only = start_fake(|c| c.read_only = true).await;

    let yes = client(&writable, TOKEN).probe().await.expect("probe");
    let no = client(&read_only, TOKEN).probe().await.expect("probe");
    let bad = client(&writable, "not-the-token")
        .probe()
        .await
        .expect_err("probe");

    assert!(yes.can_write && !no.can_write);
    assert_eq!(yes.account, ACCOUNT);
    assert!(no.message.contains("read-only"), "{}", no.message);
    assert_eq!(bad.kind, ErrorKind::Unauthorized);
    assert!(writable.ssh_keys().is_empty() && read_only.ssh_keys().is_empty());
    let refusal = read_only
        .request_log()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a write attempt");
    assert_eq!(
        (refusal.status, refusal.response["error"]["code"].as_str()),
        (Some(401), Some("token_readonly"))
    );
}

#[tokio::test(start_paused = true)]
async fn the_boot_hook_receives_the_user_data_once_when_the_server_runs() {
    let events = Arc::new(Mutex::new(Vec::<BootEvent>::new()));
    let sink = events.clone();
    let hook: BootHook = Arc::new(move |e| sink.lock().expect("lock").push(e));
    let fake = start_fake(|c| c.boot_hook = Some(hook)).await;
    let hetzner = client(&fake, TOKEN);

    let created = hetzner
        .create_server(&create_request("web-1", "npv_boot"))
        .await
        .expect("create");
    assert!(
        events.lock().expect("lock").is_empty(),
        "not booted while initializing"
    );
    wait_running(&hetzner, &created.id).await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    let events = events.lock().expect("lock").clone();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].server_id.as_str(), events[0].name.as_str()),
        (created.id.as_str(), "web-1")
    );
    assert!(events[0].user_data.starts_with("#cloud-config"));
    assert_eq!(Some(events[0].ipv4.clone()), created.ipv4);
}
