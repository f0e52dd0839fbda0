//! The README's minimal IAM policy is exactly what the AWS client and the STS exchange
//! call: every code path runs against the fake EC2 + STS, which records each action.
use std::collections::BTreeSet;

use crate::aws_support::{exercise_everything, start_fake};

/// The actions of every ```json block of the README's "Minimal IAM policy" section.
fn readme_actions() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let section = readme
        .split("### Minimal IAM policy")
        .nth(1)
        .expect("a Minimal IAM policy section");
    let section = section.split("\n### ").next().unwrap_or(section);
    let mut actions = BTreeSet::new();
    for block in section.split("```json").skip(1) {
        let json = block.split("```").next().unwrap_or_default();
        let policy: serde_json::Value =
            serde_json::from_str(json).expect("the policy block is JSON");
        for statement in policy["Statement"].as_array().expect("statements") {
            for a in statement["Action"].as_array().expect("an action list") {
                actions.insert(a.as_str().expect("action").to_owned());
            }
        }
    }
    actions
}

#[tokio::test]
async fn the_readme_policy_lists_exactly_the_actions_the_client_calls() {
    let fake = start_fake(|_| {}).await;
    exercise_everything(&fake).await;
    let log = fake.requests();
    let mut called: BTreeSet<String> = log
        .iter()
        .map(|r| format!("{}:{}", r.service, r.action))
        .collect();
    if log
        .iter()
        .any(|r| r.params.keys().any(|k| k.starts_with("TagSpecification.")))
    {
        // Tagging on create is authorised as ec2:CreateTags.
        called.insert("ec2:CreateTags".into());
    }
    // Allowed to every identity, whatever its policies say.
    for free in ["sts:GetCallerIdentity", "sts:GetSessionToken"] {
        assert!(called.remove(free), "{free} was called");
    }
    let documented = readme_actions();
    let missing: Vec<&String> = called.difference(&documented).collect();
    let unused: Vec<&String> = documented.difference(&called).collect();
    assert!(
        missing.is_empty() && unused.is_empty(),
        "README policy differs from the calls: missing {missing:?}, never called {unused:?}"
    );
}
