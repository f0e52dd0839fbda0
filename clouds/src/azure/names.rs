//! Names, paths and tags of what Levelrail creates in the operator's resource group. One VM
//! per provision, named after the node; its NIC, public IP, NSG and OS disk are named after
//! the VM; one VNet per location (`levelrail-vnet-<location>`) with one subnet is shared by
//! every VM there and never deleted. Every resource carries the ownership tags.
use std::collections::BTreeMap;

use serde_json::Value;

use crate::Ownership;

/// Tag of the control plane.
pub(super) const CONTROL_PLANE: &str = "levelrail-control-plane";
/// Tag of the provision (the idempotency key of a create).
pub(super) const PROVISION: &str = "levelrail-provision";
/// The subnet the VMs join.
pub(super) const SUBNET: &str = "levelrail-nodes";
/// Address space of a Levelrail VNet.
pub(super) const VNET_PREFIX: &str = "10.60.0.0/16";
/// The subnet's range inside it.
pub(super) const SUBNET_PREFIX: &str = "10.60.0.0/24";
/// Linux VM names: at most 64 characters.
const MAX_VM_NAME: usize = 64;

/// Where one credential acts: its subscription and resource group.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    pub(super) subscription: String,
    pub(super) resource_group: String,
}

impl Scope {
    /// `/subscriptions/<sub>`.
    pub(super) fn subscription_path(&self) -> String {
        format!("/subscriptions/{}", self.subscription)
    }

    /// `/subscriptions/<sub>/resourceGroups/<rg>`.
    pub(super) fn group_path(&self) -> String {
        format!(
            "{}/resourceGroups/{}",
            self.subscription_path(),
            self.resource_group
        )
    }

    /// `…/providers/Microsoft.Compute/virtualMachines/<vm>`.
    pub(super) fn vm(&self, vm: &str) -> String {
        format!(
            "{}/providers/Microsoft.Compute/virtualMachines/{vm}",
            self.group_path()
        )
    }

    /// `…/providers/Microsoft.Compute/disks/<vm>-osdisk`.
    pub(super) fn os_disk(&self, vm: &str) -> String {
        format!(
            "{}/providers/Microsoft.Compute/disks/{}",
            self.group_path(),
            os_disk_name(vm)
        )
    }

    /// `…/providers/Microsoft.Network/<kind>/<name>`.
    pub(super) fn network(&self, kind: &str, name: &str) -> String {
        format!(
            "{}/providers/Microsoft.Network/{kind}/{name}",
            self.group_path()
        )
    }

    /// The shared VNet of `location`.
    pub(super) fn vnet(&self, location: &str) -> String {
        self.network("virtualNetworks", &format!("levelrail-vnet-{location}"))
    }

    /// The shared subnet of `location`.
    pub(super) fn subnet(&self, location: &str) -> String {
        format!("{}/subnets/{SUBNET}", self.vnet(location))
    }

    /// The VM's NIC.
    pub(super) fn nic(&self, vm: &str) -> String {
        self.network("networkInterfaces", &format!("{vm}-nic"))
    }

    /// The VM's public IP.
    pub(super) fn public_ip(&self, vm: &str) -> String {
        self.network("publicIPAddresses", &format!("{vm}-pip"))
    }

    /// The VM's network security group.
    pub(super) fn nsg(&self, vm: &str) -> String {
        self.network("networkSecurityGroups", &format!("{vm}-nsg"))
    }
}

pub(super) fn os_disk_name(vm: &str) -> String {
    format!("{vm}-osdisk")
}

/// The tags of every resource created for `o`.
pub(super) fn tags(o: &Ownership) -> BTreeMap<String, String> {
    o.labels()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The tags of the shared VNet (no provision: it outlives every VM).
pub(super) fn shared_tags(o: &Ownership) -> BTreeMap<String, String> {
    BTreeMap::from([(CONTROL_PLANE.to_owned(), o.control_plane.clone())])
}

/// The `tags` object of `resource`.
pub(super) fn tag<'a>(resource: &'a Value, key: &str) -> Option<&'a str> {
    resource.get("tags")?.get(key)?.as_str()
}

/// Whether `resource` was created for the provision of `o` (or `o` names no provision).
pub(super) fn is_ours(resource: &Value, o: &Ownership) -> bool {
    o.provision_id.is_empty() || tag(resource, PROVISION) == Some(o.provision_id.as_str())
}

/// A VM name ARM accepts and that stays a valid resource name with our suffixes.
pub(super) fn valid_vm_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_VM_NAME
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// An ARM `$filter` on one tag (quotes doubled, as OData requires).
pub(super) fn tag_filter(key: &str, value: &str) -> String {
    format!(
        "tagName eq '{}' and tagValue eq '{}'",
        key.replace('\'', "''"),
        value.replace('\'', "''")
    )
}

/// Percent-encodes a query value.
pub(super) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The last segment of an ARM resource id (its name).
pub(super) fn last_segment(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_follow_the_scheme() {
        let s = Scope {
            subscription: "sub".into(),
            resource_group: "rg".into(),
        };
        assert_eq!(
            s.vm("web-1"),
            "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/web-1"
        );
        assert!(
            s.subnet("westeurope")
                .ends_with("/virtualNetworks/levelrail-vnet-westeurope/subnets/levelrail-nodes")
        );
        assert!(
            s.public_ip("web-1")
                .ends_with("/publicIPAddresses/web-1-pip")
        );
        assert_eq!(last_segment(&s.nic("web-1")), "web-1-nic");
        assert!(valid_vm_name("web-1") && !valid_vm_name("-x") && !valid_vm_name(&"a".repeat(65)));
        assert_eq!(
            tag_filter("k", "it's"),
            "tagName eq 'k' and tagValue eq 'it''s'"
        );
        assert_eq!(encode("a b'"), "a%20b%27");
    }
}
