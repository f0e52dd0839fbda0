//! What an Azure credential can do, proven without creating anything: the resource group
//! must be readable; the principal's effective permissions there
//! (`Microsoft.Authorization/permissions`) must allow writing VMs and their network
//! resources; and the subscription-scope reads behind the region and size pickers
//! (locations, Resource SKUs) must be allowed, which the probe proves by making them. Without
//! those VM creation still works but the wizard cannot list locations or sizes, so that gap
//! is reported as its own named finding, `missing_subscription_reader`, naming each read.
use serde_json::Value;

use super::wire::{Location, Permission};
use super::{API_AUTHORIZATION, API_RESOURCES, API_SKUS, API_SUBSCRIPTIONS, AzureProvider, skus};
use crate::{CapabilityReport, ErrorKind, ProviderError, ProviderId};
use levelrail_types::PermissionCheck;

/// Every action the client's calls need in the resource group: reading it and its tagged
/// resources, and reading, creating, joining and deleting the VM and its network resources
/// (`tests/tests/providers/azure_permissions.rs` derives this set from the calls the client
/// makes and holds this list to it).
pub const REQUIRED_ACTIONS: [&str; 23] = [
    "Microsoft.Resources/subscriptions/resourceGroups/read",
    "Microsoft.Resources/subscriptions/resourceGroups/resources/read",
    "Microsoft.Compute/virtualMachines/read",
    "Microsoft.Compute/virtualMachines/write",
    "Microsoft.Compute/virtualMachines/delete",
    "Microsoft.Compute/disks/read",
    "Microsoft.Compute/disks/delete",
    "Microsoft.Network/virtualNetworks/read",
    "Microsoft.Network/virtualNetworks/write",
    "Microsoft.Network/virtualNetworks/subnets/read",
    "Microsoft.Network/virtualNetworks/subnets/join/action",
    "Microsoft.Network/networkInterfaces/read",
    "Microsoft.Network/networkInterfaces/write",
    "Microsoft.Network/networkInterfaces/delete",
    "Microsoft.Network/networkInterfaces/join/action",
    "Microsoft.Network/publicIPAddresses/read",
    "Microsoft.Network/publicIPAddresses/write",
    "Microsoft.Network/publicIPAddresses/delete",
    "Microsoft.Network/publicIPAddresses/join/action",
    "Microsoft.Network/networkSecurityGroups/read",
    "Microsoft.Network/networkSecurityGroups/write",
    "Microsoft.Network/networkSecurityGroups/delete",
    "Microsoft.Network/networkSecurityGroups/join/action",
];

/// The subscription-scope reads of the region and size pickers, in the order the probe
/// makes them (`tests/tests/providers/azure_permissions.rs` derives them from the calls too).
pub const SUBSCRIPTION_ACTIONS: [&str; 2] = [
    "Microsoft.Resources/subscriptions/locations/read",
    "Microsoft.Compute/skus/read",
];

/// The location whose SKUs the probe reads when it may not list locations: ARM checks the
/// permission first, and a location the subscription lacks answers an empty list.
const FALLBACK_LOCATION: &str = "eastus";

pub(super) async fn probe(p: &AzureProvider) -> Result<CapabilityReport, ProviderError> {
    let s = &p.scope;
    let account = format!(
        "subscription {} / resource group {}",
        s.subscription, s.resource_group
    );
    match p.arm.get::<Value>(&s.group_path(), API_RESOURCES).await {
        Ok(_) => {}
        Err(e) if e.kind == ErrorKind::NotFound => {
            return Err(finding(
                ErrorKind::InvalidRequest,
                "resource_group_missing",
                &format!(
                    "the resource group `{}` does not exist (or the principal cannot see it); Levelrail never creates it",
                    s.resource_group
                ),
            ));
        }
        Err(e) => return Err(e),
    }
    let permissions: Vec<Permission> = p
        .arm
        .list(
            &format!(
                "{}/providers/Microsoft.Authorization/permissions",
                s.group_path()
            ),
            API_AUTHORIZATION,
        )
        .await?;
    let missing: Vec<&str> = REQUIRED_ACTIONS
        .iter()
        .copied()
        .filter(|a| !allowed(&permissions, a))
        .collect();
    let can_write = missing.is_empty();
    let missing_reads = missing_subscription_reads(p).await?;
    if !missing_reads.is_empty() {
        return Err(reader_finding(&s.subscription, can_write, &missing_reads));
    }
    let message = if can_write {
        format!("the service principal can create VMs and their network in {account}")
    } else {
        format!(
            "the service principal cannot create VMs in {account}: missing {}; grant it Contributor on the resource group",
            missing.join(", ")
        )
    };
    // The subscription reads passed (a refusal returned above).
    let mut permissions = PermissionCheck::of(REQUIRED_ACTIONS, &missing);
    permissions.extend(PermissionCheck::of(SUBSCRIPTION_ACTIONS, &[]));
    Ok(CapabilityReport {
        can_write,
        account,
        message,
        permissions,
    })
}

/// The finding of a principal without the subscription-scope reads `missing`.
fn reader_finding(subscription: &str, can_write: bool, missing: &[&str]) -> ProviderError {
    let write = if can_write {
        "can create VMs in the resource group, but it "
    } else {
        ""
    };
    finding(
        ErrorKind::Unauthorized,
        "missing_subscription_reader",
        &format!(
            "missing subscription-scope Reader: the service principal {write}lacks {} in subscription {subscription}, so the region and size pickers fail; grant it Reader on the subscription (or a role with {})",
            missing.join(", "),
            SUBSCRIPTION_ACTIONS.join(" and ")
        ),
    )
}

/// The subscription-scope reads ARM refuses (403), found by making them: the locations
/// list, then one page of the SKUs of the first physical location.
async fn missing_subscription_reads(p: &AzureProvider) -> Result<Vec<&'static str>, ProviderError> {
    let [locations_read, skus_read] = SUBSCRIPTION_ACTIONS;
    let s = &p.scope;
    let mut missing = Vec::new();
    let locations = p
        .arm
        .list::<Location>(
            &format!("{}/locations", s.subscription_path()),
            API_SUBSCRIPTIONS,
        )
        .await;
    let location = match locations {
        Ok(all) => all.into_iter().find(Location::is_physical).map(|l| l.name),
        Err(e) if e.status == Some(403) => {
            missing.push(locations_read);
            None
        }
        Err(e) => return Err(e),
    };
    let location = location.unwrap_or_else(|| FALLBACK_LOCATION.to_owned());
    let path = skus::path(&s.subscription_path(), &location);
    match p.arm.get::<Value>(&path, API_SKUS).await {
        Ok(_) => {}
        Err(e) if e.status == Some(403) => missing.push(skus_read),
        Err(e) => return Err(e),
    }
    Ok(missing)
}

/// Whether one of the role assignments allows `action` (and does not exclude it).
fn allowed(permissions: &[Permission], action: &str) -> bool {
    permissions.iter().any(|p| {
        p.actions.iter().any(|a| glob(a, action)) && !p.not_actions.iter().any(|a| glob(a, action))
    })
}

/// Azure action patterns: case-insensitive, `*` matching any run of characters.
fn glob(pattern: &str, action: &str) -> bool {
    let (p, a) = (pattern.to_ascii_lowercase(), action.to_ascii_lowercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == a;
    }
    let mut rest = a.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

fn finding(kind: ErrorKind, code: &str, message: &str) -> ProviderError {
    ProviderError::new(ProviderId::Azure, kind, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_patterns_match_like_azure() {
        assert!(glob("*", "Microsoft.Compute/virtualMachines/write"));
        assert!(glob(
            "microsoft.compute/*",
            "Microsoft.Compute/virtualMachines/write"
        ));
        assert!(glob("*/read", "Microsoft.Network/virtualNetworks/read"));
        assert!(!glob("*/read", "Microsoft.Network/virtualNetworks/write"));
        assert!(glob(
            "Microsoft.*/virtualMachines/*",
            "Microsoft.Compute/virtualMachines/write"
        ));
        let contributor = Permission {
            actions: vec!["*".into()],
            not_actions: vec!["Microsoft.Authorization/*/Write".into()],
        };
        let reader = Permission {
            actions: vec!["*/read".into()],
            not_actions: vec![],
        };
        assert!(allowed(
            std::slice::from_ref(&contributor),
            "Microsoft.Compute/virtualMachines/write"
        ));
        assert!(!allowed(
            &[reader],
            "Microsoft.Compute/virtualMachines/write"
        ));
        assert!(!allowed(
            &[contributor],
            "Microsoft.Authorization/roleAssignments/write"
        ));
    }
}
