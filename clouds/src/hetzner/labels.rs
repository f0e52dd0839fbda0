//! Hetzner labels for what Levelrail creates, and the label selectors that find it again.
//! Label values must be empty or 1–63 characters of `[a-zA-Z0-9._-]` that begin and end
//! alphanumeric; anything else is sanitised with a digest suffix so distinct inputs stay
//! distinct.
use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use crate::Ownership;

/// Label key of the control plane.
pub(super) const CONTROL_PLANE: &str = "levelrail-control-plane";
/// Label key of the provision (the idempotency key of a create).
pub(super) const PROVISION: &str = "levelrail-provision";

const MAX_VALUE: usize = 63;

/// Whether Hetzner accepts `v` as a label value.
pub(super) fn is_valid_value(v: &str) -> bool {
    let bytes = v.as_bytes();
    let inner_ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    v.is_empty()
        || (bytes.len() <= MAX_VALUE
            && bytes.iter().all(inner_ok)
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric())
}

/// `raw` unchanged when valid; otherwise invalid characters become `-`, the ends are trimmed
/// to alphanumerics, and 8 hex digits of SHA-256(`raw`) are appended.
pub(super) fn value(raw: &str) -> String {
    if is_valid_value(raw) {
        return raw.to_owned();
    }
    let digest = hex::encode(&Sha256::digest(raw.as_bytes())[..4]);
    let replaced: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_VALUE - digest.len() - 1)
        .collect();
    let trimmed = replaced.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() {
        digest
    } else {
        format!("{trimmed}-{digest}")
    }
}

/// The labels of every resource created for `o`.
pub(super) fn ownership(o: &Ownership) -> BTreeMap<String, String> {
    o.labels()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), value(v)))
        .collect()
}

/// `levelrail-control-plane=<cp>,levelrail-provision=<id>`.
pub(super) fn provision_selector(o: &Ownership) -> String {
    format!(
        "{CONTROL_PLANE}={},{PROVISION}={}",
        value(&o.control_plane),
        value(&o.provision_id)
    )
}

/// `levelrail-control-plane=<cp>`.
pub(super) fn control_plane_selector(control_plane: &str) -> String {
    format!("{CONTROL_PLANE}={}", value(control_plane))
}

/// The servers of this control plane created for any of `provisions`.
pub(super) fn provisions_selector<'a>(
    control_plane: &str,
    provisions: impl IntoIterator<Item = &'a str>,
) -> String {
    let values: Vec<String> = provisions.into_iter().map(value).collect();
    format!(
        "{},{PROVISION} in ({})",
        control_plane_selector(control_plane),
        values.join(",")
    )
}

/// Whether `labels` mark a resource created for this provision.
pub(super) fn is_ours(labels: &BTreeMap<String, String>, o: &Ownership) -> bool {
    labels.get(PROVISION) == Some(&value(&o.provision_id))
}

/// `levelrail-<provision>`: the name of the provision's firewall, prefix of its key names.
pub(super) fn resource_name(o: &Ownership) -> String {
    format!("levelrail-{}", value(&o.provision_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_values_are_kept_and_invalid_ones_sanitised_into_distinct_valid_values() {
        assert_eq!(value("npv_01HXYZ"), "npv_01HXYZ");
        assert_eq!(value(""), "");
        for raw in ["-npv 1/", "a".repeat(80).as_str(), "ü", "x_", "__"] {
            let v = value(raw);
            assert!(is_valid_value(&v) && !v.is_empty(), "{raw:?} -> {v:?}");
        }
        assert_ne!(value("a b"), value("a/b"));
        assert!(value("a b").starts_with("a-b-"));
    }

    #[test]
    fn selectors_use_the_sanitised_values() {
        let o = Ownership {
            control_plane: "cp 1".into(),
            provision_id: "npv_1".into(),
            node_name: "web-1".into(),
        };
        let sel = provision_selector(&o);
        assert!(
            sel.starts_with("levelrail-control-plane=cp-1-")
                && sel.ends_with(",levelrail-provision=npv_1"),
            "{sel}"
        );
        assert_eq!(ownership(&o)["levelrail-node"], "web-1");
        assert!(is_ours(&ownership(&o), &o));
        assert_eq!(resource_name(&o), "levelrail-npv_1");
    }
}
