//! Creating a VM in the operator's existing resource group: the group is checked (never
//! created), the location's VNet and subnet are created only when missing (never PUT again,
//! so subnets added later survive), then the VM's NSG, Standard static public IP and NIC,
//! then the VM; every long-running operation is followed to completion. ARM PUTs are
//! idempotent by name, and the VM is looked up first: a repeated create adopts the VM an
//! earlier attempt created for the same provision, and refuses a VM of that name that is
//! not ours.
use base64::Engine as _;
use rand::RngCore as _;
use serde_json::Value;
use tracing::info;

use super::names::{self, Scope};
use super::wire::{self, VmSpec};
use super::{API_COMPUTE, API_NETWORK, API_RESOURCES, AzureProvider};
use crate::{CreateServer, ErrorKind, ProviderError, ProviderId, ServerInfo};

/// The largest `customData` Azure accepts (before base64).
const MAX_CUSTOM_DATA: usize = 65_535;

pub(super) async fn create_server(
    p: &AzureProvider,
    req: &CreateServer,
) -> Result<ServerInfo, ProviderError> {
    validate(req)?;
    let scope = &p.scope;
    let o = &req.ownership;
    ensure_group(p).await?;
    if let Some(vm) = p
        .arm
        .find::<Value>(&scope.vm(&req.name), API_COMPUTE)
        .await?
    {
        if !names::is_ours(&vm, o) {
            return Err(invalid(
                "name_taken",
                &format!(
                    "a VM named `{}` exists in the resource group and was not created for this provision",
                    req.name
                ),
            ));
        }
        info!(provision = %o.provision_id, vm = %req.name, "adopting the VM an earlier attempt created");
        return p.server(&req.name).await;
    }
    let location = req.region.as_str();
    let subnet = ensure_subnet(p, req).await?;
    let tags = names::tags(o);
    let nsg = scope.nsg(&req.name);
    p.arm
        .put(
            &nsg,
            API_NETWORK,
            &wire::nsg(location, &tags, req.ssh_source_cidr.as_deref()),
        )
        .await?;
    let pip = scope.public_ip(&req.name);
    p.arm
        .put(&pip, API_NETWORK, &wire::public_ip(location, &tags))
        .await?;
    let nic = scope.nic(&req.name);
    p.arm
        .put(
            &nic,
            API_NETWORK,
            &wire::nic(location, &tags, &subnet, &pip, &nsg),
        )
        .await?;
    let image = match &req.image {
        Some(urn) => wire::image_urn(urn).ok_or_else(|| {
            invalid(
                "invalid_image",
                "the image must be an Azure image URN publisher:offer:sku:version",
            )
        })?,
        None => wire::UBUNTU,
    };
    let password = throwaway_password();
    let body = wire::vm(&VmSpec {
        name: &req.name,
        location,
        size: &req.size,
        image,
        user_data: &req.user_data,
        ssh_keys: &req.ssh_public_keys,
        password: &password,
        nic: &nic,
        tags: &tags,
    });
    p.arm.put(&scope.vm(&req.name), API_COMPUTE, &body).await?;
    info!(provision = %o.provision_id, vm = %req.name, location, "VM created");
    p.server(&req.name).await
}

/// The resource group must exist: Levelrail never creates it.
async fn ensure_group(p: &AzureProvider) -> Result<(), ProviderError> {
    let path = p.scope.group_path();
    match p.arm.find::<Value>(&path, API_RESOURCES).await? {
        Some(_) => Ok(()),
        None => Err(invalid(
            "resource_group_missing",
            &format!(
                "the resource group `{}` does not exist in subscription {}; create it (Levelrail never creates it) and grant the service principal Contributor on it",
                p.scope.resource_group, p.scope.subscription
            ),
        )),
    }
}

/// The location's VNet (created when missing, never replaced) and its subnet.
async fn ensure_subnet(p: &AzureProvider, req: &CreateServer) -> Result<String, ProviderError> {
    let scope: &Scope = &p.scope;
    let vnet = scope.vnet(&req.region);
    if p.arm.find::<Value>(&vnet, API_NETWORK).await?.is_none() {
        p.arm
            .put(
                &vnet,
                API_NETWORK,
                &wire::vnet(
                    &req.region,
                    &names::shared_tags(&req.ownership),
                    names::VNET_PREFIX,
                    (names::SUBNET, names::SUBNET_PREFIX),
                ),
            )
            .await?;
        info!(location = %req.region, "Levelrail VNet created");
    }
    let subnet = scope.subnet(&req.region);
    let found = match p.arm.find::<Value>(&subnet, API_NETWORK).await? {
        Some(s) => s,
        None => {
            p.arm
                .put(&subnet, API_NETWORK, &wire::subnet(names::SUBNET_PREFIX))
                .await?
        }
    };
    Ok(found
        .get("id")
        .and_then(Value::as_str)
        .map_or(subnet, str::to_owned))
}

fn validate(req: &CreateServer) -> Result<(), ProviderError> {
    req.ownership.provision(ProviderId::Azure)?;
    if !names::valid_vm_name(&req.name) {
        return Err(invalid(
            "invalid_input",
            "the VM name must be 1 to 64 letters, digits, -, _ or ., starting and ending with a letter or digit",
        ));
    }
    if req.region.is_empty() || !req.region.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(invalid(
            "invalid_input",
            "the location must be an Azure location name such as westeurope",
        ));
    }
    if req.user_data.len() > MAX_CUSTOM_DATA {
        return Err(invalid(
            "invalid_input",
            "the user-data exceeds Azure's 64 KiB customData limit",
        ));
    }
    for (i, k) in req.ssh_public_keys.iter().enumerate() {
        if k.split_whitespace().count() < 2 {
            return Err(invalid(
                "invalid_input",
                &format!("ssh_public_keys[{i}] is not an OpenSSH public key"),
            ));
        }
    }
    Ok(())
}

/// Azure requires a password when no SSH key is given: 24 random bytes, with every
/// character class Azure asks for. Never stored or logged, so nobody can log in with it.
fn throwaway_password() -> String {
    let mut bytes = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!(
        "Lr9!{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

fn invalid(code: &str, message: &str) -> ProviderError {
    ProviderError::new(ProviderId::Azure, ErrorKind::InvalidRequest, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throwaway_passwords_meet_azures_rules_and_differ() {
        let a = throwaway_password();
        assert!(a.len() >= 12 && a.len() <= 123);
        assert!(
            a.chars().any(|c| c.is_ascii_lowercase()) || a.chars().any(|c| c.is_ascii_uppercase())
        );
        assert!(a.contains('!') && a.chars().any(|c| c.is_ascii_digit()));
        assert_ne!(a, throwaway_password());
    }
}
