//! Compute Engine wire formats: the `Instance` and `Firewall` bodies Levelrail sends (checked
//! against the v1 discovery document in the tests) and the parts of answers it reads.
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::labels::{DENY_FIREWALL, DENY_PRIORITY, NODE_TAG};

/// The image of a create that names none.
pub(super) const UBUNTU: &str =
    "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64";
/// The network every instance joins (every project has it unless deleted).
pub(super) const NETWORK: &str = "global/networks/default";
/// The user the operator's SSH keys are installed for.
pub(super) const SSH_USER: &str = "levelrail";

#[derive(Debug, Deserialize)]
pub(super) struct Zone {
    pub(super) name: String,
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) region: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MachineType {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) guest_cpus: u32,
    #[serde(default)]
    pub(super) memory_mb: u32,
    #[serde(default)]
    pub(super) deprecated: Option<Value>,
    /// `X86_64`, `ARM64` or `ARCHITECTURE_UNSPECIFIED`.
    #[serde(default)]
    pub(super) architecture: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Instance {
    pub(super) name: String,
    #[serde(default)]
    pub(super) zone: String,
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) labels: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) network_interfaces: Vec<NetworkInterface>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NetworkInterface {
    #[serde(default)]
    pub(super) access_configs: Vec<AccessConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AccessConfig {
    #[serde(default, rename = "natIP")]
    pub(super) nat_ip: String,
}

/// What an instance body is made of.
#[derive(Debug)]
pub(super) struct InstanceSpec<'a> {
    pub(super) name: &'a str,
    pub(super) zone: &'a str,
    pub(super) machine_type: &'a str,
    pub(super) image: &'a str,
    pub(super) user_data: &'a str,
    pub(super) ssh_keys: &'a [String],
    pub(super) labels: &'a BTreeMap<String, String>,
    /// The SSH firewall's network tag, when SSH is allowed.
    pub(super) ssh_tag: Option<&'a str>,
}

/// The instance: boot disk deleted with it, the default network with an ephemeral
/// `ONE_TO_ONE_NAT` address, the cloud-init document under `user-data`, the operator's keys
/// under `ssh-keys`, our labels and the network tag the deny-ingress firewall targets.
pub(super) fn instance(s: &InstanceSpec<'_>) -> Value {
    let mut items = vec![json!({ "key": "user-data", "value": s.user_data })];
    if !s.ssh_keys.is_empty() {
        let keys: Vec<String> = s
            .ssh_keys
            .iter()
            .map(|k| format!("{SSH_USER}:{}", k.trim()))
            .collect();
        items.push(json!({ "key": "ssh-keys", "value": keys.join("\n") }));
    }
    let mut tags = vec![NODE_TAG.to_owned()];
    tags.extend(s.ssh_tag.map(str::to_owned));
    json!({
        "name": s.name,
        "machineType": format!("zones/{}/machineTypes/{}", s.zone, s.machine_type),
        "disks": [{ "boot": true, "autoDelete": true, "initializeParams": { "sourceImage": s.image, "diskSizeGb": "20" } }],
        "networkInterfaces": [{ "network": NETWORK, "accessConfigs": [{ "name": "External NAT", "type": "ONE_TO_ONE_NAT" }] }],
        "metadata": { "items": items },
        "labels": s.labels,
        "tags": { "items": tags },
    })
}

/// The project-wide rule: deny every protocol from anywhere to instances tagged
/// `levelrail-node`.
pub(super) fn deny_firewall() -> Value {
    json!({
        "name": DENY_FIREWALL,
        "description": "Levelrail: no inbound traffic to provisioned nodes",
        "network": NETWORK,
        "direction": "INGRESS",
        "priority": DENY_PRIORITY,
        "sourceRanges": ["0.0.0.0/0"],
        "targetTags": [NODE_TAG],
        "denied": [{ "IPProtocol": "all" }],
        "disabled": false,
    })
}

/// Whether an existing deny rule still does its job: every field we set has our value.
pub(super) fn deny_firewall_intact(found: &Value) -> bool {
    let want = deny_firewall();
    let network_ok = found
        .get("network")
        .and_then(Value::as_str)
        .is_some_and(|n| n.ends_with(NETWORK));
    let same = |k: &str| found.get(k) == want.get(k);
    let enabled = found.get("disabled").and_then(Value::as_bool) != Some(true);
    let no_allow = found
        .get("allowed")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    network_ok
        && enabled
        && no_allow
        && [
            "direction",
            "priority",
            "sourceRanges",
            "targetTags",
            "denied",
        ]
        .iter()
        .all(|k| same(k))
}

/// The per-instance rule allowing TCP 22 from `cidr` to the instance's own tag.
pub(super) fn ssh_firewall(name: &str, cidr: &str) -> Value {
    json!({
        "name": name,
        "description": "Levelrail: SSH from the operator",
        "network": NETWORK,
        "direction": "INGRESS",
        "priority": DENY_PRIORITY - 100,
        "sourceRanges": [cidr],
        "targetTags": [name],
        "allowed": [{ "IPProtocol": "tcp", "ports": ["22"] }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_deny_rule_is_detected() {
        let mut found = deny_firewall();
        found["network"] =
            json!("https://compute.googleapis.com/compute/v1/projects/p/global/networks/default");
        found["id"] = json!("123");
        assert!(deny_firewall_intact(&found));
        let mut opened = found.clone();
        opened["sourceRanges"] = json!(["10.0.0.0/8"]);
        assert!(!deny_firewall_intact(&opened));
        let mut disabled = found.clone();
        disabled["disabled"] = json!(true);
        assert!(!deny_firewall_intact(&disabled));
        let mut priority = found;
        priority["priority"] = json!(65534);
        assert!(!deny_firewall_intact(&priority));
    }
}
