//! `nodes provisions list|show|cancel`: the table (newest first, paging with `--all`), the
//! key/value view with failure and stage timings, JSON, and NOT_FOUND.
use levelrail_proto::provisioner::v1::{InstallStep, Provision, ProvisionStatus, Role};

use crate::fake_provisioner::{creating, happy_path, next};
use crate::helpers::{FakeSecrets, TestServer};

/// Three provisions, newest first: building (installing), web-1 (ready), db-1 (failed).
fn three() -> Vec<Provision> {
    let ready = happy_path("npv_1").pop().expect("ready");
    let failed = next(
        &creating("npv_2", "db-1", 100),
        ProvisionStatus::Failed,
        112,
        |p| {
            p.failed_phase = ProvisionStatus::Creating as i32;
            p.failure_reason = "the provider refused the server".into();
            p.provider_error_code = "resource_limit_exceeded".into();
        },
    );
    let installing = next(
        &creating("npv_3", "build-1", 200),
        ProvisionStatus::Installing,
        230,
        |p| {
            p.role = Role::Build as i32;
            p.install_step = InstallStep::AgentVerified as i32;
        },
    );
    vec![installing, failed, ready]
}

async fn server_with(provisions: Vec<Provision>) -> TestServer {
    let server = TestServer::start().await;
    server.provisioner().provisions = provisions;
    server
}

#[tokio::test]
async fn list_prints_the_table_newest_first() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(&["nodes", "provisions", "list"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let expected = "\
ID     PROVIDER  NAME     ROLE     STATUS      NODE ID  CREATED
npv_3  hetzner   build-1  build    installing  -        2026-01-02T03:07:25Z
npv_2  hetzner   db-1     general  failed      -        2026-01-02T03:05:45Z
npv_1  hetzner   web-1    general  ready       node_1   2026-01-02T03:04:05Z
";
    assert_eq!(out.stdout, expected);
    assert_eq!(out.stderr, "");
}

#[tokio::test]
async fn list_stops_after_one_page_and_says_more_exist() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "list", "--page-size", "2"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 3, "header and two rows");
    assert_eq!(
        out.stderr,
        "more provisions exist: pass --all to list them all\n"
    );
    let requests = server.provisioner().list_requests.clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].page_size, 2);
}

#[tokio::test]
async fn list_all_follows_the_page_tokens_to_the_end() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "provisions",
                "list",
                "--all",
                "--page-size",
                "1",
                "--json",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    let ids: Vec<&str> = doc["provisions"]
        .as_array()
        .expect("array")
        .iter()
        .map(|p| p["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["npv_3", "npv_2", "npv_1"]);
    assert_eq!(doc["next_page_token"], "");
    let tokens: Vec<String> = server
        .provisioner()
        .list_requests
        .iter()
        .map(|r| r.page_token.clone())
        .collect();
    assert_eq!(tokens, ["", "1", "2"]);
}

#[tokio::test]
async fn a_page_size_out_of_range_is_a_usage_error_naming_the_flag() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "list", "--page-size", "0"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: invalid value '0' for '--page-size <N>'"),
        "{}",
        out.stderr
    );
    assert!(server.provisioner().list_requests.is_empty());
}

#[tokio::test]
async fn show_prints_the_failure_and_the_stage_timings() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "show", "npv_2"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let expected = "\
id:               npv_2
name:             db-1
provider:         hetzner
region:           fsn1
size:             cx22
role:             general
status:           failed
install step:     -
ip address:       -
node id:          -
failed phase:     creating
failure reason:   the provider refused the server
provider code:    resource_limit_exceeded
keep on failure:  no
created:          2026-01-02T03:05:45Z
updated:          2026-01-02T03:05:57Z
generation:       2
stages:
  creating    2026-01-02T03:05:45Z  12s
  failed      2026-01-02T03:05:57Z
";
    assert_eq!(out.stdout, expected);
    assert_eq!(server.provisioner().get_requests, ["npv_2"]);
}

#[tokio::test]
async fn show_of_an_installing_provision_shows_the_install_step_and_no_failure() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "show", "npv_3"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("\nstatus:           installing\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\ninstall step:     agent verified\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\nrole:             build\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("failure reason"), "{}", out.stdout);
    assert!(
        out.stdout.ends_with("  installing  2026-01-02T03:07:55Z\n"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn show_json_maps_every_field() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["--json", "nodes", "provisions", "show", "npv_2"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["provision"],
        serde_json::json!({
            "id": "npv_2",
            "provider": "hetzner",
            "region": "fsn1",
            "size": "cx22",
            "name": "db-1",
            "role": "general",
            "status": "failed",
            "install_step": null,
            "ip_address": "",
            "node_id": "",
            "failed_phase": "creating",
            "failure_reason": "the provider refused the server",
            "provider_error_code": "resource_limit_exceeded",
            "created_at": "2026-01-02T03:05:45Z",
            "updated_at": "2026-01-02T03:05:57Z",
            "generation": 2,
            "stages": [
                { "status": "creating", "entered_at": "2026-01-02T03:05:45Z" },
                { "status": "failed", "entered_at": "2026-01-02T03:05:57Z" },
            ],
            "keep_on_failure": false,
            "placements": [],
        })
    );
}

#[tokio::test]
async fn show_watch_and_cancel_of_an_unknown_provision_say_not_found() {
    for command in ["show", "watch", "cancel"] {
        // Arrange
        let server = TestServer::start().await;

        // Act
        let out = server
            .run(
                &["nodes", "provisions", command, "npv_404"],
                FakeSecrets::none(),
            )
            .await;

        // Assert
        assert_eq!(out.code, 1, "{command}: {out:?}");
        assert_eq!(
            out.stderr, "error: provision npv_404 not found\n",
            "{command}"
        );
        assert_eq!(out.stdout, "");
    }
}

#[tokio::test]
async fn cancel_reports_the_provision_cancelled() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "cancel", "npv_3"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provision npv_3 cancelled, status: failed\n");
    assert_eq!(server.provisioner().cancel_requests, ["npv_3"]);
}

#[tokio::test]
async fn retry_starts_a_provision_with_the_failed_ones_settings() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "retry", "npv_2"],
            FakeSecrets::none(),
        )
        .await;
    let refused = server
        .run(
            &["nodes", "provisions", "retry", "npv_3"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provision npv_4 started with the settings of npv_2, status: creating\n\
         follow with: levelrail-cli nodes provisions watch npv_4\n"
    );
    let sent = server.provisioner().retry_requests.clone();
    assert_eq!(sent[0].id, "npv_2");
    assert!(!sent[0].request_id.is_empty(), "a request id");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("only a failed provision"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_cancel_still_unwinding_says_how_to_follow_it() {
    // Arrange
    let server = server_with(three()).await;
    server.provisioner().cancel_in_background = true;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "cancel", "npv_3"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "provision npv_3 is being cancelled, status: installing\n\
         follow with: levelrail-cli nodes provisions watch npv_3\n"
    );
}

#[tokio::test]
async fn cancel_json_prints_the_provision_with_the_reason() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "cancel", "npv_3", "--json"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["provision"]["status"], "failed");
    assert_eq!(doc["provision"]["failed_phase"], "installing");
    assert_eq!(doc["provision"]["failure_reason"], "cancelled by operator");
}

#[tokio::test]
async fn cancelling_a_finished_provision_shows_failed_precondition() {
    // Arrange
    let server = server_with(three()).await;

    // Act
    let out = server
        .run(
            &["nodes", "provisions", "cancel", "npv_1"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: FAILED_PRECONDITION: the provision has already finished\n"
    );
}
