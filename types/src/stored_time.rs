//! The precision every store keeps a timestamp at.
use time::{OffsetDateTime, UtcOffset};

/// `t` in UTC, truncated to microseconds (PostgreSQL's precision); `None` outside years
/// 1–9999 (neither RFC 3339 text nor every backend can hold them).
pub fn to_stored_precision(t: OffsetDateTime) -> Option<OffsetDateTime> {
    let utc = t
        .checked_to_offset(UtcOffset::UTC)
        .filter(|u| (1..=9999).contains(&u.year()))?;
    Some(
        utc.replace_nanosecond(utc.nanosecond() / 1_000 * 1_000)
            .unwrap_or(utc),
    )
}
