//! Capacity fallback in the CLI: `--region fsn1,nbg1 --size cx22,cx32` sends the first
//! choices and the alternatives in order, bad lists are usage errors naming the flag, and
//! `provisions show` / `--json` list every choice with what became of it.
use levelrail_proto::provisioner::v1::{Placement, PlacementOutcome};

use crate::fake_provisioner::happy_path;
use crate::helpers::{FakeSecrets, TestServer};

fn provision_args<'a>(region: &'a str, size: &'a str) -> Vec<&'a str> {
    vec![
        "nodes",
        "provision",
        "--provider",
        "hetzner",
        "--region",
        region,
        "--size",
        size,
        "--name",
        "web-1",
    ]
}

#[tokio::test]
async fn comma_separated_regions_and_sizes_are_sent_as_the_first_choice_and_its_alternatives() {
    let server = TestServer::start().await;

    let out = server
        .run(
            &provision_args("fsn1, nbg1,hel1", "cx22,cx32"),
            FakeSecrets::none(),
        )
        .await;

    assert_eq!(out.code, 0, "{out:?}");
    let request = server.provisioner().provision_requests[0].clone();
    assert_eq!(
        (request.region.as_str(), request.size.as_str()),
        ("fsn1", "cx22")
    );
    assert_eq!(request.fallback_regions, ["nbg1", "hel1"]);
    assert_eq!(request.fallback_sizes, ["cx32"]);
}

#[tokio::test]
async fn an_empty_entry_or_too_many_choices_is_a_usage_error_naming_the_flag() {
    let server = TestServer::start().await;

    let empty = server
        .run(&provision_args("fsn1,,nbg1", "cx22"), FakeSecrets::none())
        .await;
    let many = server
        .run(&provision_args("fsn1", "a,b,c,d,e,f"), FakeSecrets::none())
        .await;

    assert_eq!(empty.code, 2, "{empty:?}");
    assert!(
        empty.stderr.contains("--region must not be empty"),
        "{empty:?}"
    );
    assert_eq!(many.code, 2, "{many:?}");
    assert!(
        many.stderr.contains("--size names at most 5 choices"),
        "{many:?}"
    );
    assert!(server.provisioner().provision_requests.is_empty());
}

fn placement(region: &str, outcome: PlacementOutcome, reason: &str) -> Placement {
    Placement {
        region: region.into(),
        size: "cx22".into(),
        outcome: outcome as i32,
        reason: reason.into(),
        provider_error_code: if reason.is_empty() {
            String::new()
        } else {
            "resource_unavailable".into()
        },
    }
}

#[tokio::test]
async fn show_lists_every_choice_with_its_outcome_and_reason() {
    let server = TestServer::start().await;
    let mut ready = happy_path("npv_1").pop().expect("ready");
    ready.region = "nbg1".into();
    ready.placements = vec![
        placement(
            "fsn1",
            PlacementOutcome::Rejected,
            "capacity unavailable in fsn1 (resource_unavailable)",
        ),
        placement("nbg1", PlacementOutcome::InUse, ""),
    ];
    server.provisioner().provisions = vec![ready];

    let text = server
        .run(
            &["nodes", "provisions", "show", "npv_1"],
            FakeSecrets::none(),
        )
        .await;
    let json = server
        .run(
            &["--json", "nodes", "provisions", "show", "npv_1"],
            FakeSecrets::none(),
        )
        .await;

    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout.contains(
            "\nchoices:\n  fsn1/cx22                 rejected  capacity unavailable in fsn1 (resource_unavailable)\n  nbg1/cx22                 in use\n"
        ),
        "{}",
        text.stdout
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let choices = &doc["provision"]["placements"];
    assert_eq!(choices[0]["outcome"], "rejected");
    assert_eq!(choices[0]["provider_error_code"], "resource_unavailable");
    assert_eq!(choices[1]["outcome"], "in_use");
}
