//! The precision every store keeps.
use time::{OffsetDateTime, UtcOffset};

use crate::model::ports::StoreError;

/// `t` as every backend stores it: UTC, to the microsecond. Years outside 1..=9999 are
/// refused (neither backend orders them as it orders the rest).
pub fn stored_time(t: OffsetDateTime) -> Result<OffsetDateTime, StoreError> {
    t.checked_to_offset(UtcOffset::UTC)
        .filter(|u| (1..=9999).contains(&u.year()))
        .map(|u| {
            u.replace_nanosecond(u.nanosecond() / 1_000 * 1_000)
                .unwrap_or(u)
        })
        .ok_or_else(|| StoreError::Corrupt("timestamp outside years 1-9999".into()))
}
