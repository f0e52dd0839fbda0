//! Names and tags of what Levelrail creates at DigitalOcean. Droplet names are not unique
//! there, so the provision tag (`levelrail-provision-<id>`) is the idempotency key: it is
//! listed before any create. Tags allow letters, digits, `:`, `-` and `_` (at most 255);
//! firewall names letters, digits, `.` and `-`.
use crate::{ErrorKind, ProviderError, ProviderId};

/// Every droplet Levelrail creates carries this tag.
pub(super) const OWNER_TAG: &str = "levelrail";
const CONTROL_PLANE_PREFIX: &str = "levelrail-cp-";
const BOOTING_PREFIX: &str = "levelrail-booting-";
const PROVISION_PREFIX: &str = "levelrail-provision-";
const MAX_TAG_LEN: usize = 255;

/// `levelrail-provision-<id>`, or `InvalidRequest` when the id cannot be part of a tag.
pub(super) fn provision_tag(provision_id: &str) -> Result<String, ProviderError> {
    tag(PROVISION_PREFIX, provision_id, "provision id")
}

/// `levelrail-cp-<control plane>`.
pub(super) fn control_plane_tag(control_plane: &str) -> Result<String, ProviderError> {
    tag(CONTROL_PLANE_PREFIX, control_plane, "control plane id")
}

/// `levelrail-booting-<control plane>`: a droplet carries it from its create until a poll
/// finds it running with an address; the poller lists this tag alone, so a round reads the
/// droplets still booting, not the fleet.
pub(super) fn booting_tag(control_plane: &str) -> Result<String, ProviderError> {
    tag(BOOTING_PREFIX, control_plane, "control plane id")
}

/// The provision id carried by a droplet's tags, when it has ours.
pub(super) fn provision_from_tags(tags: &[String]) -> Option<String> {
    tags.iter()
        .find_map(|t| t.strip_prefix(PROVISION_PREFIX))
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// `levelrail-<provision>` with characters a firewall name refuses replaced by `-`.
pub(super) fn firewall_name(provision_id: &str) -> String {
    let id: String = provision_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("levelrail-{id}")
}

/// Name of the `index`th SSH key uploaded for a provision.
pub(super) fn key_name(provision_id: &str, index: usize) -> String {
    format!("{}{index}", key_prefix(provision_id))
}

/// Name of the generated key embedded when the operator gave none.
pub(super) fn lock_key_name(provision_id: &str) -> String {
    format!("{}lock", key_prefix(provision_id))
}

/// The prefix shared by every SSH key uploaded for a provision (and no other provision's:
/// the id is followed by `-key-`).
pub(super) fn key_prefix(provision_id: &str) -> String {
    format!("levelrail-{provision_id}-key-")
}

fn tag(prefix: &str, value: &str, what: &str) -> Result<String, ProviderError> {
    let valid = !value.is_empty()
        && prefix.len() + value.len() <= MAX_TAG_LEN
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_'));
    if !valid {
        return Err(ProviderError::new(
            ProviderId::DigitalOcean,
            ErrorKind::InvalidRequest,
            "invalid_tag",
            &format!(
                "the {what} cannot be used in a DigitalOcean tag (letters, digits, ':', '-', '_'; at most {} characters)",
                MAX_TAG_LEN - prefix.len()
            ),
        ));
    }
    Ok(format!("{prefix}{value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_the_digitalocean_tag_alphabet() {
        assert_eq!(
            provision_tag("npv_01H8").unwrap(),
            "levelrail-provision-npv_01H8"
        );
        assert_eq!(
            control_plane_tag("cp-1:eu").unwrap(),
            "levelrail-cp-cp-1:eu"
        );
        assert_eq!(booting_tag("cp-1:eu").unwrap(), "levelrail-booting-cp-1:eu");
        assert!(booting_tag("cp 1").is_err());
        assert!(provision_tag("").is_err());
        assert!(provision_tag("a b").is_err_and(|e| e.kind == ErrorKind::InvalidRequest));
        assert!(provision_tag(&"x".repeat(240)).is_err());
    }

    #[test]
    fn firewall_names_and_key_names_are_derived_from_the_provision() {
        assert_eq!(firewall_name("npv_01H8"), "levelrail-npv-01H8");
        assert_eq!(key_name("npv_1", 0), "levelrail-npv_1-key-0");
        assert!(!key_name("npv_10", 0).starts_with(&key_prefix("npv_1")));
        let tags = vec![
            "levelrail".to_owned(),
            "levelrail-provision-npv_9".to_owned(),
        ];
        assert_eq!(provision_from_tags(&tags).as_deref(), Some("npv_9"));
        assert_eq!(provision_from_tags(&["web".to_owned()]), None);
    }
}
