//! Shared output helpers: aligned text tables, key/value views, RFC 3339 timestamps and
//! the time differences shown as elapsed times.
use std::time::Duration;

use prost_types::Timestamp;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Renders `rows` under `headers` with columns separated by two spaces and padded to the
/// widest cell; the last column is not padded, so lines carry no trailing spaces.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header_row: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header_row).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.pop();
    out
}

/// Renders `pairs` as `key:  value` lines with the values aligned; an empty value shows as
/// `-`, so every key keeps a visible value.
pub(crate) fn key_values(pairs: &[(&str, String)]) -> String {
    let width = pairs
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<String> = pairs
        .iter()
        .map(|(key, value)| {
            let value = if value.is_empty() {
                "-"
            } else {
                value.as_str()
            };
            let pad = width - key.chars().count();
            format!("{key}:{}  {value}", " ".repeat(pad))
        })
        .collect();
    lines.join("\n")
}

/// The optional timestamp in RFC 3339 to the second, or an empty string.
pub(crate) fn rfc3339_or_empty(ts: Option<&Timestamp>) -> String {
    ts.map(rfc3339_seconds).unwrap_or_default()
}

/// The UTC time of day `HH:MM:SS` of the timestamp, or `--:--:--` if it is out of range.
pub(crate) fn clock(ts: &Timestamp) -> String {
    OffsetDateTime::from_unix_timestamp(ts.seconds)
        .map(|t| format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()))
        .unwrap_or_else(|_| "--:--:--".to_owned())
}

/// `later - earlier`, or `None` when `later` is before `earlier`.
pub(crate) fn between(earlier: &Timestamp, later: &Timestamp) -> Option<Duration> {
    let nanos = |ts: &Timestamp| i128::from(ts.seconds) * 1_000_000_000 + i128::from(ts.nanos);
    let diff = nanos(later) - nanos(earlier);
    u64::try_from(diff).ok().map(Duration::from_nanos)
}

/// The timestamp in RFC 3339 (UTC, with fractional seconds when there are any), or its raw
/// seconds if it is out of range.
pub(crate) fn rfc3339(ts: &Timestamp) -> String {
    let nanos = i128::from(ts.seconds) * 1_000_000_000 + i128::from(ts.nanos);
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("@{}", ts.seconds))
}

/// The timestamp in RFC 3339 to the second, for tables.
pub(crate) fn rfc3339_seconds(ts: &Timestamp) -> String {
    rfc3339(&Timestamp {
        seconds: ts.seconds,
        nanos: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_pads_every_column_but_the_last() {
        let rows = vec![
            vec!["hetzner".to_owned(), "connected".to_owned(), "x".to_owned()],
            vec!["aws".to_owned(), "not connected".to_owned(), String::new()],
        ];
        assert_eq!(
            table(&["PROVIDER", "STATUS", "NOTE"], &rows),
            "PROVIDER  STATUS         NOTE\nhetzner   connected      x\naws       not connected"
        );
    }

    #[test]
    fn key_values_align_values_and_show_empty_ones_as_a_dash() {
        let pairs = [("id", "npv_1".to_owned()), ("node id", String::new())];
        assert_eq!(key_values(&pairs), "id:       npv_1\nnode id:  -");
    }

    #[test]
    fn clock_and_between_work_on_protobuf_timestamps() {
        let a = Timestamp {
            seconds: 1_767_323_045,
            nanos: 0,
        };
        let b = Timestamp {
            seconds: 1_767_323_049,
            nanos: 500_000_000,
        };
        assert_eq!(clock(&a), "03:04:05");
        assert_eq!(between(&a, &b), Some(Duration::from_millis(4500)));
        assert_eq!(between(&b, &a), None);
    }

    #[test]
    fn timestamps_format_as_rfc3339_utc() {
        let ts = Timestamp {
            seconds: 1_767_323_045,
            nanos: 500_000_000,
        };
        assert_eq!(rfc3339(&ts), "2026-01-02T03:04:05.5Z");
        assert_eq!(rfc3339_seconds(&ts), "2026-01-02T03:04:05Z");
    }
}
