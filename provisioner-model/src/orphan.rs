//! Orphans: servers at a provider that this control plane made (they carry its label) but
//! that no live provision or node accounts for. An orphan is recorded when an undo gives up,
//! or when the sweeper finds a labelled server of a failed or unknown provision; it stays
//! `pending` until the sweeper (or the operator) deletes it, or the operator adopts it.
use std::fmt;

use time::OffsetDateTime;

use super::FieldError;
use levelrail_types::ProviderId;

/// The prefix of every orphan id.
pub const ORPHAN_ID_PREFIX: &str = "nor_";

/// An orphan record's id: `nor_` followed by 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrphanId(String);

impl OrphanId {
    /// A fresh random id.
    pub fn generate() -> Self {
        OrphanId(format!(
            "{ORPHAN_ID_PREFIX}{}",
            uuid::Uuid::new_v4().simple()
        ))
    }

    /// Validates an id given in the field `id`. The error never echoes the value.
    pub fn parse(value: &str) -> Result<Self, FieldError> {
        let valid = value.strip_prefix(ORPHAN_ID_PREFIX).is_some_and(|hex| {
            hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if valid {
            Ok(OrphanId(value.to_owned()))
        } else {
            Err(FieldError::new(
                "id",
                "is not an orphan id (nor_ followed by 32 hex digits)",
            ))
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrphanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a server is an orphan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanReason {
    /// The undo of a failed provision gave up (deadline, refused credential, rejected
    /// request).
    UndoGaveUp,
    /// A labelled server of a provision that failed.
    FailedProvision,
    /// A labelled server whose provision this control plane does not know.
    UnknownProvision,
}

impl OrphanReason {
    /// Stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanReason::UndoGaveUp => "undo_gave_up",
            OrphanReason::FailedProvision => "failed_provision",
            OrphanReason::UnknownProvision => "unknown_provision",
        }
    }

    /// The reason named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            OrphanReason::UndoGaveUp,
            OrphanReason::FailedProvision,
            OrphanReason::UnknownProvision,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
    }
}

/// Where an orphan stands: `pending` until it is `deleted` or `adopted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanState {
    /// Still at the provider; the sweeper retries its deletion (or, for an unknown
    /// provision the operator did not opt in to sweep, only lists it).
    Pending,
    /// Deleted at the provider.
    Deleted,
    /// Taken over by the operator as a node-to-be; never swept.
    Adopted,
}

impl OrphanState {
    /// Stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanState::Pending => "pending",
            OrphanState::Deleted => "deleted",
            OrphanState::Adopted => "adopted",
        }
    }

    /// The state named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            OrphanState::Pending,
            OrphanState::Deleted,
            OrphanState::Adopted,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// One orphaned server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub id: OrphanId,
    /// The cloud it is at.
    pub provider: ProviderId,
    /// The provider's server id, when known (an undo whose create answer was lost finds
    /// the server by its labels instead).
    pub server_id: Option<String>,
    /// The provision id its labels carry.
    pub provision_id: String,
    /// The node name it was made for (or the server's name).
    pub node_name: String,
    /// The region, when known.
    pub region: String,
    /// Why it is an orphan.
    pub reason: OrphanReason,
    /// When it was first recorded.
    pub first_seen: OffsetDateTime,
    /// Deletion attempts so far.
    pub attempts: u32,
    /// The last attempt's error (one clean line).
    pub last_error: Option<String>,
    /// Where it stands.
    pub state: OrphanState,
    /// When it last changed.
    pub updated_at: OffsetDateTime,
}

impl Orphan {
    /// The key that makes a re-found orphan the same record: the server id, or the
    /// provision id when the server id is unknown.
    pub fn server_key(&self) -> String {
        match &self.server_id {
            Some(id) => id.clone(),
            None => format!("provision:{}", self.provision_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_orphan_id_round_trips_and_a_foreign_one_is_refused() {
        let id = OrphanId::generate();
        assert_eq!(OrphanId::parse(id.as_str()).expect("parses"), id);
        let err = OrphanId::parse("npv_0123").expect_err("wrong prefix");
        assert!(err.to_string().contains("id"), "{err}");
    }

    #[test]
    fn reasons_and_states_round_trip_by_name() {
        for r in [
            OrphanReason::UndoGaveUp,
            OrphanReason::FailedProvision,
            OrphanReason::UnknownProvision,
        ] {
            assert_eq!(OrphanReason::from_name(r.as_str()), Some(r));
        }
        for s in [
            OrphanState::Pending,
            OrphanState::Deleted,
            OrphanState::Adopted,
        ] {
            assert_eq!(OrphanState::from_name(s.as_str()), Some(s));
        }
    }
}
