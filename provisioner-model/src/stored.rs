//! The precision every store keeps.
use levelrail_types::to_stored_precision;
use time::OffsetDateTime;

use crate::ports::StoreError;

/// `t` as every backend stores it ([`to_stored_precision`]); years outside 1..=9999 are a
/// `Corrupt` error.
pub fn stored_time(t: OffsetDateTime) -> Result<OffsetDateTime, StoreError> {
    to_stored_precision(t)
        .ok_or_else(|| StoreError::Corrupt("timestamp outside years 1-9999".into()))
}
