//! Timestamps as every backend stores them: UTC, to the microsecond (PostgreSQL's
//! precision), within years 1–9999. SQLite keeps them as fixed-width text so that they
//! sort and compare as text.
pub use levelrail_types::to_stored_precision;
use time::OffsetDateTime;
use time::macros::format_description;

/// Fixed-width RFC 3339 (`2026-12-03T21:05:25.000000Z`); `None` outside years 1–9999.
pub fn format_timestamp(t: OffsetDateTime) -> Option<String> {
    let fixed =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    to_stored_precision(t)?.format(&fixed).ok()
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn timestamps_are_fixed_width_utc_micros() {
        let t = datetime!(2026-12-03 22:05:25.123456789 +01:00);

        assert_eq!(
            format_timestamp(t).as_deref(),
            Some("2026-12-03T21:05:25.123456Z")
        );
        assert_eq!(
            format_timestamp(datetime!(0999-01-02 03:04:05 UTC)).as_deref(),
            Some("0999-01-02T03:04:05.000000Z")
        );
    }

    #[test]
    fn years_outside_1_to_9999_are_refused() {
        assert_eq!(format_timestamp(datetime!(0000-12-31 23:00 UTC)), None);
        assert_eq!(
            to_stored_precision(datetime!(9999-12-31 23:30 -01:00)),
            None
        );
    }
}
