//! Go-style durations (`APP_NODE_PROVISION_TIMEOUT=20m`, `1h30m`, `90s`, `1.5h`) as the
//! original read them, and the compact form failure reasons print (`20m`, `1h30m`).
use std::time::Duration;

/// Parses a Go duration: one or more `<decimal><unit>` with units `ns us µs ms s m h`
/// (`0` alone is allowed). Negative values are refused.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err("an empty duration".into());
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_len);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a duration like 20m, 1h30m or 90s"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(format!(
                    "{text:?} has an unknown unit (use ns, us, ms, s, m or h)"
                ));
            }
        };
        total += value * seconds;
        rest = tail;
    }
    Duration::try_from_secs_f64(total).map_err(|_| format!("{text:?} is out of range"))
}

/// `20m`, `1h30m`, `45s`, `1m30s`, `500ms`: the shortest exact form for whole units.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        let cases = [
            ("20m", 1200),
            ("1h30m", 5400),
            ("90s", 90),
            ("1.5h", 5400),
            ("0", 0),
            ("2h0m0s", 7200),
        ];
        for (text, secs) in cases {
            assert_eq!(
                parse_go_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        assert_eq!(parse_go_duration("300ms"), Ok(Duration::from_millis(300)));
        for bad in ["", "20", "-5m", "5 m", "1d", "m"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_format_compactly() {
        assert_eq!(format_duration(Duration::from_secs(1200)), "20m");
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
    }
}
