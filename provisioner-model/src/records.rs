//! The stored shapes of join tokens and new nodes, and the single rule deciding why a
//! token cannot be redeemed (shared by every backend, and by the in-memory test double).
use std::fmt;

use time::OffsetDateTime;

use crate::ports::StoreError;
use crate::{JoinTokenId, Node, NodeId, NodeName, Role, WorkloadKind, secret_hash_matches};

/// A join token as stored: only a hash of its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinTokenRecord {
    /// Public id (`njt_…`), safe to log.
    pub id: JoinTokenId,
    /// SHA-256 of the secret's bytes.
    pub secret_sha256: [u8; 32],
    /// The only node name this token may enroll, when bound.
    pub node_name: Option<NodeName>,
    /// The provision it is bound to, when any.
    pub provision_id: Option<String>,
    /// The role of the node it enrolls.
    pub role: Role,
    /// When it was minted.
    pub created_at: OffsetDateTime,
    /// When it stops being redeemable.
    pub expires_at: OffsetDateTime,
    /// When it was redeemed.
    pub used_at: Option<OffsetDateTime>,
    /// The node its redemption created.
    pub used_by_node: Option<NodeId>,
    /// When it was revoked.
    pub revoked_at: Option<OffsetDateTime>,
}

impl JoinTokenRecord {
    /// Why this token cannot be redeemed at `now` with a secret hashing to
    /// `secret_sha256` for `node_name`, or `None` when it can. A wrong secret is reported
    /// as `Unknown`, like an id that does not exist, so a caller learns nothing from it.
    /// Otherwise: revoked, then used, then expired, then wrong name.
    pub fn rejection(
        &self,
        secret_sha256: &[u8; 32],
        node_name: Option<&NodeName>,
        now: OffsetDateTime,
    ) -> Option<RedeemError> {
        if !secret_hash_matches(&self.secret_sha256, secret_sha256) {
            Some(RedeemError::Unknown)
        } else if self.revoked_at.is_some() {
            Some(RedeemError::Revoked)
        } else if self.used_at.is_some() {
            Some(RedeemError::Used)
        } else if self.expires_at <= now {
            Some(RedeemError::Expired)
        } else if self
            .node_name
            .as_ref()
            .is_some_and(|bound| Some(bound) != node_name)
        {
            Some(RedeemError::WrongName)
        } else {
            None
        }
    }
}

impl fmt::Debug for JoinTokenRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinTokenRecord")
            .field("id", &self.id)
            .field("secret_sha256", &"<redacted>")
            .field("node_name", &self.node_name)
            .field("provision_id", &self.provision_id)
            .field("role", &self.role)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("used_at", &self.used_at)
            .field("used_by_node", &self.used_by_node)
            .field("revoked_at", &self.revoked_at)
            .finish()
    }
}

/// The node a redemption creates (its name and times come from the redemption itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNode {
    /// The node's id, already the CN of its client certificate.
    pub id: NodeId,
    /// Its reported addresses.
    pub addresses: Vec<String>,
    pub agent_version: String,
    /// What it runs.
    pub workload_kinds: Vec<WorkloadKind>,
    /// The provision that created it, when any.
    pub provision_id: Option<String>,
    /// Serial number of its client certificate (hex).
    pub cert_serial: String,
    /// SHA-256 of its client certificate's DER (lowercase hex).
    pub cert_fingerprint: String,
    /// When its client certificate expires (stored precision).
    pub cert_expires_at: OffsetDateTime,
    /// The client certificate as issued (PEM): a retried Enroll whose first answer was
    /// lost gets it again.
    pub certificate_pem: String,
}

impl NewNode {
    /// The node record a redemption at `now` (already at stored precision) creates.
    pub fn enrolled(&self, name: &NodeName, now: OffsetDateTime) -> Node {
        Node {
            id: self.id.clone(),
            name: name.clone(),
            addresses: self.addresses.clone(),
            agent_version: self.agent_version.clone(),
            docker_version: None,
            workload_kinds: self.workload_kinds.clone(),
            provision_id: self.provision_id.clone(),
            enrolled_at: now,
            last_seen_at: now,
            cert_serial: self.cert_serial.clone(),
            cert_fingerprint: self.cert_fingerprint.clone(),
            cert_expires_at: self.cert_expires_at,
            server: None,
        }
    }
}

/// Why a redemption failed.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    /// No such token, or the secret does not match.
    #[error("join token unknown")]
    Unknown,
    /// The token expired.
    #[error("join token expired")]
    Expired,
    /// The token was already redeemed.
    #[error("join token already used")]
    Used,
    /// The token was revoked.
    #[error("join token revoked")]
    Revoked,
    /// The token is bound to another node name.
    #[error("join token is bound to another node name")]
    WrongName,
    /// A node with this name exists; the token was left unused.
    #[error("a node with this name already exists")]
    NameTaken,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The failure to report when the conditional update matched no row, decided from the
/// row as it is now (`None`: the row is gone).
pub fn explain_failed_update(
    row: Option<&JoinTokenRecord>,
    secret_sha256: &[u8; 32],
    node_name: &NodeName,
    now: OffsetDateTime,
) -> RedeemError {
    // A row that looks redeemable although the update missed it can only have changed in
    // between; the token is then not usable for this request, which `Used` describes.
    row.map_or(RedeemError::Unknown, |r| {
        r.rejection(secret_sha256, Some(node_name), now)
            .unwrap_or(RedeemError::Used)
    })
}

#[cfg(test)]
mod tests {
    use time::Duration;

    use super::*;

    fn record(now: OffsetDateTime) -> JoinTokenRecord {
        JoinTokenRecord {
            id: JoinTokenId::generate(),
            secret_sha256: [1; 32],
            node_name: None,
            provision_id: None,
            role: Role::General,
            created_at: now,
            expires_at: now + Duration::minutes(15),
            used_at: None,
            used_by_node: None,
            revoked_at: None,
        }
    }

    fn name(s: &str) -> NodeName {
        NodeName::parse(s).expect("valid name")
    }

    #[test]
    fn a_fresh_token_with_the_right_secret_is_redeemable_until_it_expires() {
        let now = OffsetDateTime::now_utc();
        let r = record(now);
        assert!(r.rejection(&[1; 32], Some(&name("a")), now).is_none());
        let at_expiry = r.expires_at;
        assert!(matches!(
            r.rejection(&[1; 32], None, at_expiry),
            Some(RedeemError::Expired)
        ));
        let just_before = at_expiry - Duration::seconds(1);
        assert!(r.rejection(&[1; 32], None, just_before).is_none());
    }

    #[test]
    fn a_wrong_secret_is_reported_as_unknown_even_for_a_used_token() {
        let now = OffsetDateTime::now_utc();
        let mut r = record(now);
        r.used_at = Some(now);
        assert!(matches!(
            r.rejection(&[2; 32], None, now),
            Some(RedeemError::Unknown)
        ));
    }

    #[test]
    fn revoked_wins_over_used_and_used_over_expired_and_expired_over_wrong_name() {
        let now = OffsetDateTime::now_utc();
        let mut r = record(now);
        r.node_name = Some(name("bound"));
        r.expires_at = now;
        assert!(matches!(
            r.rejection(&[1; 32], Some(&name("x")), now),
            Some(RedeemError::Expired)
        ));
        r.used_at = Some(now);
        assert!(matches!(
            r.rejection(&[1; 32], None, now),
            Some(RedeemError::Used)
        ));
        r.revoked_at = Some(now);
        assert!(matches!(
            r.rejection(&[1; 32], None, now),
            Some(RedeemError::Revoked)
        ));
    }

    #[test]
    fn a_bound_token_accepts_only_its_name() {
        let now = OffsetDateTime::now_utc();
        let mut r = record(now);
        r.node_name = Some(name("web-1"));
        assert!(r.rejection(&[1; 32], Some(&name("web-1")), now).is_none());
        let wrong = r.rejection(&[1; 32], Some(&name("web-2")), now);
        assert!(matches!(wrong, Some(RedeemError::WrongName)));
    }

    #[test]
    fn the_debug_of_a_record_hides_the_secret_hash() {
        let r = record(OffsetDateTime::now_utc());
        let text = format!("{r:?}");
        assert!(!text.contains("[1, 1"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
