//! The Azure probe checks exactly the actions the client's calls need: a whole create,
//! list, get and delete, and the region and size pickers, against the fake ARM is recorded,
//! each request mapped to the action Azure RBAC checks (`<type>/read|write|delete`, and the
//! `join/action` of every resource a body references), and those sets must equal the probe's
//! lists: the resource group's, and the subscription's. A custom role lacking one is named by
//! the probe, and the fake refuses the call as ARM does.
use std::collections::BTreeSet;

use levelrail_clouds::azure::{REQUIRED_ACTIONS, SUBSCRIPTION_ACTIONS};
use levelrail_clouds::{CloudProvider as _, ErrorKind};
use serde_json::Value;

use crate::azure_support::*;

/// The resource type of an ARM path under a resource group: `Namespace/type[/subtype]`.
fn resource_type(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/providers/")?;
    let segs: Vec<&str> = rest.split('/').collect();
    // Namespace, then type/name pairs.
    let mut kind = vec![segs.first()?.to_string()];
    for pair in segs[1..].chunks(2) {
        kind.push(pair[0].to_owned());
    }
    Some(kind.join("/"))
}

/// Every `"id"` a body references, as resource types.
fn referenced(body: &Value, out: &mut BTreeSet<String>) {
    match body {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "id"
                    && let Some(t) = v.as_str().and_then(resource_type)
                {
                    out.insert(t);
                }
                referenced(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| referenced(v, out)),
        _ => {}
    }
}

/// The actions the recorded requests needed at subscription scope (operation polls need none).
fn subscription_actions_used(
    fake: &levelrail_sim::fakes::azure::FakeAzureHandle,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for r in fake.request_log() {
        let path = r.path.split('?').next().unwrap_or_default();
        if !path.starts_with("/subscriptions/")
            || path.contains("/resourceGroups/")
            || path.contains("/operations/")
            || path.contains("/operationResults/")
        {
            continue;
        }
        assert_eq!(r.method, "GET", "{}", r.path);
        let kind = resource_type(path)
            .unwrap_or_else(|| format!("Microsoft.Resources/subscriptions/{}", last(path)));
        out.insert(format!("{kind}/read"));
    }
    out
}

fn last(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// The actions the recorded requests needed at resource-group scope.
fn actions_used(fake: &levelrail_sim::fakes::azure::FakeAzureHandle) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for r in fake.request_log() {
        let path = r.path.split('?').next().unwrap_or_default();
        if !path.contains("/resourceGroups/") || path.contains("/Microsoft.Authorization/") {
            continue;
        }
        let verb = match r.method.as_str() {
            "GET" => "read",
            "DELETE" => "delete",
            _ => "write",
        };
        let kind = if path.contains("/providers/") {
            resource_type(path).unwrap()
        } else if path.ends_with("/resources") {
            "Microsoft.Resources/subscriptions/resourceGroups/resources".into()
        } else {
            "Microsoft.Resources/subscriptions/resourceGroups".into()
        };
        out.insert(format!("{kind}/{verb}"));
        if r.method == "PUT" {
            let mut refs = BTreeSet::new();
            referenced(&r.body, &mut refs);
            let own = resource_type(path).unwrap_or_default();
            for t in refs.into_iter().filter(|t| *t != own) {
                out.insert(format!("{t}/join/action"));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_probe_checks_exactly_the_actions_the_client_uses() {
    let fake = start_fake(|_| {}).await;
    // Without ARM's cascade the client deletes the NIC, address and disk itself.
    fake.set_network_cascade(false);
    let azure = client(&fake);
    let mut req = create_request("perm-1", "npv_perm1");
    req.ssh_source_cidr = Some("198.51.100.4/32".into());
    let info = azure.create_server(&req).await.expect("create");
    wait_running(&azure, &info.id).await;
    azure.list_servers("cp-test").await.expect("list");
    azure
        .delete_provision_resources(Some(&info.id), &req.ownership)
        .await
        .expect("delete");
    azure.probe().await.expect("probe");
    azure.list_regions().await.expect("regions");
    azure.list_sizes(LOCATION).await.expect("sizes");

    // A disk left behind by a VM deleted outside Levelrail is deleted by its tag; the fake
    // always honours the disk's deleteOption, so this run cannot make one.
    let mut used = actions_used(&fake);
    used.insert("Microsoft.Compute/disks/delete".into());
    let listed: BTreeSet<String> = REQUIRED_ACTIONS.iter().map(|a| (*a).to_owned()).collect();
    assert_eq!(
        used,
        listed,
        "used but not probed: {:?}; probed but not used: {:?}",
        used.difference(&listed).collect::<Vec<_>>(),
        listed.difference(&used).collect::<Vec<_>>()
    );
    let listed: BTreeSet<String> = SUBSCRIPTION_ACTIONS
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    assert_eq!(subscription_actions_used(&fake), listed);
}

#[tokio::test]
async fn a_custom_role_without_deletes_is_named_by_the_probe_and_refused_by_arm() {
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);
    fake.set_custom_role(
        &["*"],
        &["Microsoft.Network/*/delete", "Microsoft.Compute/*/delete"],
    );

    let report = azure.probe().await.expect("probe");

    assert!(!report.can_write, "{report:?}");
    for action in [
        "Microsoft.Compute/virtualMachines/delete",
        "Microsoft.Network/networkInterfaces/delete",
    ] {
        assert!(report.message.contains(action), "{}", report.message);
    }
    assert!(
        !report.message.contains("virtualMachines/write"),
        "{}",
        report.message
    );
    let info = azure
        .create_server(&create_request("perm-2", "npv_perm2"))
        .await
        .expect("creating is allowed");
    let err = azure
        .delete_provision_resources(Some(&info.id), &ownership("npv_perm2"))
        .await
        .expect_err("deleting is not");
    assert_eq!(err.kind, ErrorKind::Unauthorized, "{err}");
    assert!(err.message.contains("virtualMachines/delete"), "{err}");
}

#[test]
fn the_readme_lists_exactly_the_actions_the_probe_checks() {
    let listed = crate::readme::text_block("### Azure permissions");
    assert_eq!(listed, REQUIRED_ACTIONS);
    let listed = crate::readme::text_block("#### Azure subscription reads");
    assert_eq!(listed, SUBSCRIPTION_ACTIONS);
}
