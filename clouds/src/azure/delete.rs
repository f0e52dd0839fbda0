//! Deleting a provision's VM and verifying the cascade. The VM is created with
//! `deleteOption: Delete` on its NIC and OS disk (and the NIC's on the public IP), but the
//! original implementation trusted that cascade unverified: here every dependent resource
//! (NIC, public IP, NSG, OS disk) is looked up after the VM is gone, and whatever survived is
//! deleted, NIC first (it holds the IP and the NSG). Resources are found by the VM's naming
//! scheme and by the provision tag, so a create whose answer was lost is cleaned up too. A VM
//! or NIC carrying another provision's tag is never touched.
use serde_json::Value;
use tracing::{debug, info, warn};

use super::names::{self, PROVISION};
use super::wire::GenericResource;
use super::{API_COMPUTE, API_NETWORK, API_RESOURCES, AzureProvider};
use crate::{ErrorKind, Ownership, ProviderError, ProviderId};

/// Resource types in deletion order (dependents before what they depend on).
const ORDER: [&str; 5] = [
    "Microsoft.Compute/virtualMachines",
    "Microsoft.Network/networkInterfaces",
    "Microsoft.Network/publicIPAddresses",
    "Microsoft.Network/networkSecurityGroups",
    "Microsoft.Compute/disks",
];

pub(super) async fn delete_provision_resources(
    p: &AzureProvider,
    server: Option<&str>,
    o: &Ownership,
) -> Result<(), ProviderError> {
    let provision = o.provision(ProviderId::Azure)?;
    let mut vms: Vec<String> = Vec::new();
    if let Some(id) = server {
        if !names::valid_vm_name(id) {
            return Err(ProviderError::new(
                ProviderId::Azure,
                ErrorKind::InvalidRequest,
                "invalid_id",
                "not an Azure VM name",
            ));
        }
        vms.push(id.to_owned());
    }
    let tagged = tagged(p, provision).await?;
    for r in tagged
        .iter()
        .filter(|r| r.kind.eq_ignore_ascii_case(ORDER[0]))
    {
        if !vms.contains(&r.name) {
            vms.push(r.name.clone());
        }
    }
    for vm in &vms {
        if let Some(found) = p.arm.find::<Value>(&p.scope.vm(vm), API_COMPUTE).await? {
            if !names::is_ours(&found, o) {
                return Err(ProviderError::new(
                    ProviderId::Azure,
                    ErrorKind::InvalidRequest,
                    "not_ours",
                    &format!("the VM `{vm}` was not created for this provision; it is left alone"),
                ));
            }
            p.arm.delete(&p.scope.vm(vm), API_COMPUTE).await?;
            info!(vm, provision = %o.provision_id, "VM deleted");
        }
    }
    // Verify the cascade: every dependent still present is deleted here.
    let mut leftovers: Vec<(usize, String, &str)> = Vec::new();
    for vm in &vms {
        for (rank, path, api) in [
            (1, p.scope.nic(vm), API_NETWORK),
            (2, p.scope.public_ip(vm), API_NETWORK),
            (3, p.scope.nsg(vm), API_NETWORK),
            (4, p.scope.os_disk(vm), API_COMPUTE),
        ] {
            leftovers.push((rank, path, api));
        }
    }
    for r in &tagged {
        let Some(rank) = ORDER
            .iter()
            .position(|t| r.kind.eq_ignore_ascii_case(t))
            .filter(|r| *r > 0)
        else {
            continue;
        };
        let path = match rank {
            1 => p.scope.network("networkInterfaces", &r.name),
            2 => p.scope.network("publicIPAddresses", &r.name),
            3 => p.scope.network("networkSecurityGroups", &r.name),
            _ => format!(
                "{}/providers/Microsoft.Compute/disks/{}",
                p.scope.group_path(),
                r.name
            ),
        };
        let api = if rank == 4 { API_COMPUTE } else { API_NETWORK };
        if !leftovers
            .iter()
            .any(|(_, q, _)| q.eq_ignore_ascii_case(&path))
        {
            leftovers.push((rank, path, api));
        }
    }
    leftovers.sort_by_key(|(rank, _, _)| *rank);
    let mut survived = 0;
    for (rank, path, api) in &leftovers {
        let Some(found) = p.arm.find::<Value>(path, api).await? else {
            continue;
        };
        // The disk is not tagged (ARM does not copy VM tags to an implicit OS disk): it is
        // ours by its name, which only our VM uses.
        let disk = path.contains("/Microsoft.Compute/disks/");
        if !disk && !names::is_ours(&found, o) {
            warn!(
                resource = names::last_segment(path),
                "a resource named like ours carries another provision's tag; left alone"
            );
            continue;
        }
        // The NSG has no delete option: it is always deleted here. Anything else should
        // have gone with the VM.
        if *rank == 3 {
            debug!(
                resource = names::last_segment(path),
                "deleting the VM's network security group"
            );
        } else {
            survived += 1;
            warn!(
                resource = names::last_segment(path),
                "survived the VM's delete cascade; deleting it"
            );
        }
        p.arm.delete(path, api).await?;
    }
    info!(provision = %o.provision_id, vms = vms.len(), survived, "provision resources deleted and verified gone");
    Ok(())
}

/// Every resource in the group tagged with the provision.
async fn tagged(p: &AzureProvider, provision: &str) -> Result<Vec<GenericResource>, ProviderError> {
    let filter = names::encode(&names::tag_filter(PROVISION, provision));
    p.arm
        .list(
            &format!("{}/resources?$filter={filter}", p.scope.group_path()),
            API_RESOURCES,
        )
        .await
}
