//! The audit log's entry: one state-changing call to the operator API.
use time::OffsetDateTime;

/// The prefix of an audit event's id.
pub const AUDIT_ID_PREFIX: &str = "aud_";

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// `aud_` and a UUIDv7 in hex: ids sort in the order the events were made (to the
    /// millisecond), so a page of the log is the ids below the last one seen.
    pub id: String,
    /// When the call was answered.
    pub at: OffsetDateTime,
    /// The API token that made it (`lrt_…`).
    pub token_id: String,
    /// `Service/Method`.
    pub action: String,
    /// What it acted on (empty when the call names nothing).
    pub target: String,
    /// `OK` or the gRPC status code's name.
    pub outcome: String,
    /// The caller's address.
    pub peer: String,
}

impl AuditEvent {
    /// A new event's id.
    pub fn new_id() -> String {
        format!("{AUDIT_ID_PREFIX}{}", uuid::Uuid::now_v7().simple())
    }

    /// Whether `id` has the shape of an event id (a page token names one).
    pub fn is_id(id: &str) -> bool {
        id.strip_prefix(AUDIT_ID_PREFIX)
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}
