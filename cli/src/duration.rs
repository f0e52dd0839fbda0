//! Go-style durations, as the original CLI and `APP_NODE_PROVISION_TIMEOUT` spell them:
//! parsing `90s`, `15m`, `1h30m`, `1.5h`, `250ms` for flags, and formatting elapsed times
//! compactly (`4s`, `1m27s`, `1h2m`) for output.
use std::time::Duration;

/// The units Go's `time.ParseDuration` accepts, with their length in nanoseconds. Longer
/// suffixes come first so `ms` is not read as `m` followed by garbage.
const UNITS: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("d", 0), // not a Go unit: recognised only to give a better message
];

/// Parses a non-negative Go duration (`90s`, `1h30m`, `1.5h`, `0`). The error is a short
/// reason for a clap "invalid value" message.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration, want for example 15m or 1h30m".to_owned());
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err("must not be negative".to_owned());
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(format!(
                "\"{text}\" is not a duration, want for example 15m or 1h30m"
            ));
        }
        let Some((unit, nanos_per_unit)) = UNITS.iter().find(|(u, _)| after.starts_with(u)) else {
            return Err(if after.is_empty() {
                format!("\"{text}\" is missing a unit, want for example {number}s or {number}m")
            } else {
                format!("unknown unit in \"{text}\", want h, m, s, ms, us or ns")
            });
        };
        if *nanos_per_unit == 0 {
            return Err(format!(
                "unknown unit \"{unit}\" in \"{text}\", want h, m or s"
            ));
        }
        total = total.saturating_add(scaled(number, *nanos_per_unit));
        rest = &after[unit.len()..];
    }
    let nanos = u64::try_from(total).map_err(|_| format!("\"{text}\" is too long"))?;
    Ok(Duration::from_nanos(nanos))
}

/// `whole.fraction` units of `nanos_per_unit` nanoseconds, truncated to whole nanoseconds.
fn scaled(number: &str, nanos_per_unit: u128) -> u128 {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = whole.parse().unwrap_or(0);
    let mut nanos = whole.saturating_mul(nanos_per_unit);
    let mut scale = nanos_per_unit;
    for digit in fraction.chars().filter_map(|c| c.to_digit(10)) {
        scale /= 10;
        nanos = nanos.saturating_add(u128::from(digit) * scale);
    }
    nanos
}

/// A compact elapsed time: `450ms` below a second, otherwise whole seconds as `53s`, `1m27s`,
/// `2h`, `1h0m5s` (rounded to the nearest second).
pub(crate) fn format(elapsed: Duration) -> String {
    if elapsed < Duration::from_secs(1) {
        return format!("{}ms", elapsed.as_millis());
    }
    let seconds = (elapsed.as_millis() + 500) / 1000;
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (hours, minutes, seconds) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m}m"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> u64 {
        parse(text).expect("parses").as_secs()
    }

    #[test]
    fn go_durations_parse_to_the_same_length_go_gives_them() {
        assert_eq!(secs("90s"), 90);
        assert_eq!(secs("15m"), 900);
        assert_eq!(secs("1h"), 3600);
        assert_eq!(secs("1h30m"), 5400);
        assert_eq!(secs("1.5h"), 5400);
        assert_eq!(secs("0"), 0);
        assert_eq!(parse("250ms").expect("ms"), Duration::from_millis(250));
        assert_eq!(
            parse("1m0.5s").expect("mixed"),
            Duration::from_millis(60_500)
        );
        assert_eq!(parse("3us").expect("us"), Duration::from_micros(3));
    }

    #[test]
    fn malformed_durations_say_what_is_wrong() {
        assert_eq!(
            parse("15").expect_err("no unit"),
            "\"15\" is missing a unit, want for example 15s or 15m"
        );
        assert_eq!(
            parse("2d").expect_err("days"),
            "unknown unit \"d\" in \"2d\", want h, m or s"
        );
        assert_eq!(parse("-5m").expect_err("negative"), "must not be negative");
        assert!(parse("m").is_err());
        assert!(parse("1..5s").is_err());
        assert!(parse("5x").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn elapsed_times_are_compact() {
        assert_eq!(format(Duration::from_millis(450)), "450ms");
        assert_eq!(format(Duration::from_secs(53)), "53s");
        assert_eq!(format(Duration::from_secs(87)), "1m27s");
        assert_eq!(format(Duration::from_secs(120)), "2m");
        assert_eq!(format(Duration::from_secs(7200)), "2h");
        assert_eq!(format(Duration::from_secs(3720)), "1h2m");
        assert_eq!(format(Duration::from_secs(3605)), "1h0m5s");
        assert_eq!(format(Duration::from_millis(1600)), "2s");
    }
}
