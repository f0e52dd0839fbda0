//! GCP labels and names. Label keys and values are at most 63 characters of lowercase
//! letters, digits, `_` and `-` (keys start with a letter); other values are sanitised with a
//! digest suffix so distinct inputs stay distinct. Resource names follow RFC 1035
//! (`[a-z]([-a-z0-9]{0,61}[a-z0-9])?`).
use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use crate::Ownership;

/// Label key of the control plane.
pub(super) const CONTROL_PLANE: &str = "levelrail-control-plane";
/// Label key of the provision.
pub(super) const PROVISION: &str = "levelrail-provision";
/// The network tag every instance carries (target of the deny-ingress firewall).
pub(super) const NODE_TAG: &str = "levelrail-node";
/// The project-wide firewall denying all ingress to `NODE_TAG`.
pub(super) const DENY_FIREWALL: &str = "levelrail-deny-ingress";
/// Its priority (lower wins; an SSH allow rule uses a lower number).
pub(super) const DENY_PRIORITY: i64 = 900;

const MAX: usize = 63;

fn valid_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'
}

/// `raw` unchanged when GCP accepts it as a label value; otherwise lowercased, invalid
/// characters replaced by `-`, and 8 hex digits of SHA-256(`raw`) appended.
pub(super) fn value(raw: &str) -> String {
    if raw.len() <= MAX && raw.chars().all(valid_char) {
        return raw.to_owned();
    }
    let digest = hex::encode(&Sha256::digest(raw.as_bytes())[..4]);
    let head: String = raw
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if valid_char(c) { c } else { '-' })
        .take(MAX - digest.len() - 1)
        .collect();
    format!("{head}-{digest}")
}

/// The labels of every instance created for `o`.
pub(super) fn ownership(o: &Ownership) -> BTreeMap<String, String> {
    o.labels()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), value(v)))
        .collect()
}

/// Whether `labels` mark an instance created for this provision.
pub(super) fn is_ours(labels: &BTreeMap<String, String>, o: &Ownership) -> bool {
    labels.get(PROVISION) == Some(&value(&o.provision_id))
}

/// An RFC 1035 name of at most 63 characters.
pub(super) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX
        && b[0].is_ascii_lowercase()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// The per-instance firewall allowing SSH from the operator's CIDR (and its network tag).
pub(super) fn ssh_firewall(instance: &str) -> String {
    let name = format!("levelrail-ssh-{instance}");
    if name.len() <= MAX {
        return name;
    }
    let digest = hex::encode(&Sha256::digest(instance.as_bytes())[..4]);
    format!("{}-{digest}", &name[..MAX - 9].trim_end_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_kept_or_sanitised_into_distinct_valid_values() {
        assert_eq!(value("npv_0123abcd"), "npv_0123abcd");
        let v = value("Control Plane/1");
        assert!(v.len() <= 63 && v.chars().all(valid_char), "{v}");
        assert_ne!(value("a b"), value("a/b"));
        assert!(
            valid_name("web-1") && !valid_name("Web") && !valid_name("web-") && !valid_name("1web")
        );
        let long = ssh_firewall(&"a".repeat(63));
        assert!(valid_name(&long), "{long}");
    }
}
