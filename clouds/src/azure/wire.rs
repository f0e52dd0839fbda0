//! ARM wire formats: the request bodies Levelrail sends (shaped like the Microsoft.Compute
//! 2024-07-01 and Microsoft.Network 2023-09-01 examples) and the parts of answers it reads.
use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

/// The image of a create that names none: Ubuntu 24.04 LTS (Canonical's Gen2 image).
pub(super) const UBUNTU: [&str; 4] = ["Canonical", "ubuntu-24_04-lts", "server", "latest"];
/// The Hyper-V generation `UBUNTU` boots with (its Gen1 twin is the `server-gen1` SKU): the
/// sizes offered are those that support it.
pub(super) const UBUNTU_GENERATION: &str = "V2";
/// The admin user of every VM.
pub(super) const ADMIN_USER: &str = "levelrail";

/// An entry of `GET /subscriptions/{sub}/locations`.
#[derive(Debug, Deserialize)]
pub(super) struct Location {
    pub(super) name: String,
    #[serde(default, rename = "displayName")]
    pub(super) display_name: String,
    #[serde(default)]
    pub(super) metadata: Option<LocationMetadata>,
}

impl Location {
    /// Whether it is a physical location (logical ones such as `europe` take no VM).
    pub(super) fn is_physical(&self) -> bool {
        self.metadata
            .as_ref()
            .is_none_or(|m| m.region_type.is_empty() || m.region_type == "Physical")
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct LocationMetadata {
    #[serde(default, rename = "regionType")]
    pub(super) region_type: String,
}

/// An entry of the generic resource list (`…/resources?$filter=…`).
#[derive(Debug, Deserialize)]
pub(super) struct GenericResource {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default, rename = "type")]
    pub(super) kind: String,
}

/// An entry of `…/providers/Microsoft.Authorization/permissions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Permission {
    #[serde(default)]
    pub(super) actions: Vec<String>,
    #[serde(default)]
    pub(super) not_actions: Vec<String>,
}

/// A new VNet with our subnet inline (so two creates racing to make it send the same body).
/// A VNet is never PUT again once it exists: a PUT replaces the subnet list, which would
/// delete subnets added later; a missing subnet is added as a child resource instead.
pub(super) fn vnet(
    location: &str,
    tags: &BTreeMap<String, String>,
    prefix: &str,
    subnet: (&str, &str),
) -> Value {
    json!({ "location": location, "tags": tags, "properties": {
        "addressSpace": { "addressPrefixes": [prefix] },
        "subnets": [{ "name": subnet.0, "properties": { "addressPrefix": subnet.1 } }]
    } })
}

pub(super) fn subnet(prefix: &str) -> Value {
    json!({ "properties": { "addressPrefix": prefix } })
}

/// The VM's NSG: no inbound rule (Azure's defaults then deny the internet), or TCP 22 from
/// the operator's CIDR only.
pub(super) fn nsg(
    location: &str,
    tags: &BTreeMap<String, String>,
    ssh_source: Option<&str>,
) -> Value {
    let rules: Vec<Value> = ssh_source
        .map(|cidr| {
            json!({ "name": "levelrail-ssh", "properties": {
                "priority": 1000, "direction": "Inbound", "access": "Allow", "protocol": "Tcp",
                "sourceAddressPrefix": cidr, "sourcePortRange": "*",
                "destinationAddressPrefix": "*", "destinationPortRange": "22",
                "description": "SSH from the operator"
            } })
        })
        .into_iter()
        .collect();
    json!({ "location": location, "tags": tags, "properties": { "securityRules": rules } })
}

/// A Standard static IPv4 public IP.
pub(super) fn public_ip(location: &str, tags: &BTreeMap<String, String>) -> Value {
    json!({
        "location": location, "tags": tags,
        "sku": { "name": "Standard", "tier": "Regional" },
        "properties": { "publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4" }
    })
}

/// The NIC: the shared subnet, the VM's public IP (deleted with the NIC) and its NSG.
pub(super) fn nic(
    location: &str,
    tags: &BTreeMap<String, String>,
    subnet: &str,
    pip: &str,
    nsg: &str,
) -> Value {
    json!({
        "location": location, "tags": tags,
        "properties": {
            "ipConfigurations": [{ "name": "ipconfig1", "properties": {
                "privateIPAllocationMethod": "Dynamic",
                "subnet": { "id": subnet },
                "publicIPAddress": { "id": pip, "properties": { "deleteOption": "Delete" } }
            } }],
            "networkSecurityGroup": { "id": nsg }
        }
    })
}

/// What the VM body is made of.
#[derive(Debug)]
pub(super) struct VmSpec<'a> {
    pub(super) name: &'a str,
    pub(super) location: &'a str,
    pub(super) size: &'a str,
    pub(super) image: [&'a str; 4],
    pub(super) user_data: &'a str,
    pub(super) ssh_keys: &'a [String],
    /// Used only without SSH keys (Azure requires one or the other); never stored.
    pub(super) password: &'a str,
    pub(super) nic: &'a str,
    pub(super) tags: &'a BTreeMap<String, String>,
}

/// The VM: `customData` base64, key auth (or the throw-away password), and
/// `deleteOption: Delete` on the NIC and the OS disk (the NIC's own option covers the IP).
pub(super) fn vm(s: &VmSpec<'_>) -> Value {
    let custom_data = base64::engine::general_purpose::STANDARD.encode(s.user_data);
    let mut os_profile =
        json!({ "computerName": s.name, "adminUsername": ADMIN_USER, "customData": custom_data });
    if s.ssh_keys.is_empty() {
        os_profile["adminPassword"] = json!(s.password);
        os_profile["linuxConfiguration"] = json!({ "disablePasswordAuthentication": false });
    } else {
        let keys: Vec<Value> = s
            .ssh_keys
            .iter()
            .map(|k| json!({ "path": format!("/home/{ADMIN_USER}/.ssh/authorized_keys"), "keyData": k.trim() }))
            .collect();
        os_profile["linuxConfiguration"] =
            json!({ "disablePasswordAuthentication": true, "ssh": { "publicKeys": keys } });
    }
    let [publisher, offer, sku, version] = s.image;
    json!({
        "location": s.location,
        "tags": s.tags,
        "properties": {
            "hardwareProfile": { "vmSize": s.size },
            "storageProfile": {
                "imageReference": { "publisher": publisher, "offer": offer, "sku": sku, "version": version },
                "osDisk": {
                    "name": super::names::os_disk_name(s.name),
                    "caching": "ReadWrite",
                    "createOption": "FromImage",
                    "deleteOption": "Delete",
                    "managedDisk": { "storageAccountType": "StandardSSD_LRS" }
                }
            },
            "osProfile": os_profile,
            "networkProfile": { "networkInterfaces": [{ "id": s.nic, "properties": { "primary": true, "deleteOption": "Delete" } }] }
        }
    })
}

/// `publisher:offer:sku:version` (the Azure CLI's image URN) split, when well formed.
pub(super) fn image_urn(urn: &str) -> Option<[&str; 4]> {
    let parts: Vec<&str> = urn.split(':').collect();
    match parts.as_slice() {
        [p, o, s, v] if parts.iter().all(|x| !x.is_empty()) => Some([*p, *o, *s, *v]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vm_uses_keys_when_given_and_a_password_otherwise() {
        let tags = BTreeMap::new();
        let keys = vec!["ssh-ed25519 AAAA me".to_owned()];
        let mut spec = VmSpec {
            name: "web-1",
            location: "westeurope",
            size: "Standard_B2s",
            image: UBUNTU,
            user_data: "#cloud-config\n",
            ssh_keys: &keys,
            password: "Pw",
            nic: "/nic",
            tags: &tags,
        };
        let with_keys = vm(&spec);
        assert_eq!(
            with_keys["properties"]["osProfile"]["customData"],
            "I2Nsb3VkLWNvbmZpZwo="
        );
        assert_eq!(
            with_keys["properties"]["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"],
            true
        );
        assert!(
            with_keys["properties"]["osProfile"]
                .get("adminPassword")
                .is_none()
        );
        spec.ssh_keys = &[];
        let without = vm(&spec);
        assert_eq!(without["properties"]["osProfile"]["adminPassword"], "Pw");
        assert_eq!(image_urn("a:b:c:latest"), Some(["a", "b", "c", "latest"]));
        assert_eq!(image_urn("a:b::latest"), None);
    }
}
