//! Parser for the env file a cloud-init writes (`/etc/levelrail-agent.env`).
//!
//! The format is the subset of systemd's `EnvironmentFile=` that the cloud-init uses:
//! - one `KEY=VALUE` per line; whitespace around the key and the value is trimmed;
//! - an optional leading `export ` is accepted (shell-style files);
//! - blank lines and lines whose first non-blank character is `#` are ignored;
//! - a value wrapped in a matching pair of `"` or `'` is unquoted; there are no escapes and
//!   no inline comments (`A=b # c` is the value `b # c`);
//! - a key appearing twice keeps its last value.
//!
//! A malformed line is an error naming the line number only: the line may hold a secret,
//! so its content is never echoed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::exit::AgentError;

/// Parses the env file at `path` into its variables.
pub(crate) fn read(path: &Path) -> Result<BTreeMap<String, String>, AgentError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AgentError::config("--env-file", format!("cannot read {}: {e}", path.display()))
    })?;
    parse(&text).map_err(|(line, problem)| AgentError::EnvFile {
        path: path.to_owned(),
        line,
        problem,
    })
}

/// Parses env-file text. The error is `(1-based line number, problem)`.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, (usize, &'static str)> {
    let mut vars = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = parse_line(line).map_err(|problem| (index + 1, problem))?;
        vars.insert(key.to_owned(), value.to_owned());
    }
    Ok(vars)
}

fn parse_line(line: &str) -> Result<(&str, &str), &'static str> {
    let line = line
        .strip_prefix("export ")
        .map(str::trim_start)
        .unwrap_or(line);
    let (key, value) = line.split_once('=').ok_or("expected KEY=VALUE")?;
    let key = key.trim();
    if !is_valid_key(key) {
        return Err("the variable name must match [A-Za-z_][A-Za-z0-9_]*");
    }
    Ok((key, unquote(value.trim())?))
}

fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn unquote(value: &str) -> Result<&str, &'static str> {
    let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return Ok(value);
    };
    if value.len() >= 2 && value.ends_with(quote) {
        Ok(&value[1..value.len() - 1])
    } else {
        Err("unterminated quoted value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Result<Option<String>, (usize, &'static str)> {
        parse(text).map(|vars| vars.get("A").cloned())
    }

    #[test]
    fn env_file_lines_parse_as_documented() {
        let table: &[(&str, Option<&str>)] = &[
            ("A=b", Some("b")),
            ("A=", Some("")),
            ("  A = b  ", Some("b")),
            ("A=\"quoted value\"", Some("quoted value")),
            ("A='single quoted'", Some("single quoted")),
            ("A=\"\"", Some("")),
            ("A=b=c", Some("b=c")),
            ("A=b # not a comment", Some("b # not a comment")),
            ("export A=b", Some("b")),
            ("# A=commented", None),
            ("   # indented comment", None),
            ("", None),
            ("A=first\nA=second", Some("second")),
            ("A=it's", Some("it's")),
            ("A=\"mixed'", None),
        ];
        for (text, expected) in table {
            match (one(text), expected) {
                (Ok(got), _) => assert_eq!(got.as_deref(), *expected, "{text:?}"),
                (Err(_), None) => {}
                (Err(e), Some(_)) => panic!("{text:?} failed: {e:?}"),
            }
        }
    }

    #[test]
    fn windows_line_endings_and_blank_lines_are_accepted() {
        let vars = parse("# header\r\n\r\nA=1\r\nB=\"2\"\r\n").unwrap();
        assert_eq!(vars.get("A").map(String::as_str), Some("1"));
        assert_eq!(vars.get("B").map(String::as_str), Some("2"));
    }

    #[test]
    fn malformed_lines_are_reported_by_number() {
        let table: &[(&str, usize)] = &[
            ("A=1\nLR1.secret-without-equals\n", 2),
            ("\n\n=value", 3),
            ("1A=b", 1),
            ("A B=c", 1),
            ("A=\"unterminated", 1),
            ("A='", 1),
            ("A=1\nB=2\nC='x\"", 3),
        ];
        for (text, line) in table {
            let (got, _) = parse(text).expect_err(text);
            assert_eq!(got, *line, "{text:?}");
        }
    }

    #[test]
    fn a_malformed_line_error_never_echoes_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.env");
        std::fs::write(&path, "A=1\nLR1.sup3rs3cret\n").unwrap();
        let err = read(&path).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("line 2"), "{msg}");
        assert!(!msg.contains("sup3rs3cret"), "{msg}");
        assert_eq!(err.exit_code().code(), 2);
    }
}
