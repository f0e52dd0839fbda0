//! Validated names: a node name is an RFC 1123-style DNS label restricted to lowercase ASCII
//! (`^[a-z][a-z0-9-]*$`, 1..=63 characters, no trailing hyphen), the strictest rule shared
//! by every target cloud and by Kubernetes, so a name that passes here is valid everywhere.
use std::fmt;

pub use levelrail_types::MAX_NODE_NAME_LEN;
use levelrail_types::{NameRule, check_node_name};

/// How much of a rejected value an error message may echo.
const ECHO_LIMIT: usize = 64;

/// A request field failed validation. The message names the field path and echoes at most a
/// sanitized 64-character prefix of the offending value, so errors are safe to log and to
/// return to callers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field path, for example `node_name`.
    pub field: &'static str,
    /// What is wrong, for a human.
    pub message: String,
}

impl FieldError {
    /// An error about `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }
}

/// A node name that satisfies every rule above.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeName(String);

impl NodeName {
    /// Validates a name given in a field called `name`.
    pub fn parse(value: &str) -> Result<NodeName, FieldError> {
        Self::parse_as(value, "name")
    }

    /// Validates a name given in the field `field` (used in the error).
    pub fn parse_as(value: &str, field: &'static str) -> Result<NodeName, FieldError> {
        let fail = |rule: &str| {
            if value.is_empty() {
                FieldError::new(field, rule)
            } else {
                FieldError::new(field, format!("{} {rule}", sanitized_prefix(value)))
            }
        };
        check_node_name(value).map_err(|rule| {
            fail(&match rule {
                NameRule::Empty => "is required".to_owned(),
                NameRule::TooLong => {
                    format!("is too long: at most {MAX_NODE_NAME_LEN} characters allowed")
                }
                NameRule::NotAscii => {
                    "must be ASCII: lowercase letters, digits and hyphens only".to_owned()
                }
                NameRule::BadStart => "must start with a lowercase letter (a-z)".to_owned(),
                NameRule::BadCharacter => {
                    "may contain only lowercase letters, digits and hyphens".to_owned()
                }
                NameRule::TrailingHyphen => "must not end with a hyphen".to_owned(),
            })
        })?;
        Ok(NodeName(value.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A quoted, printable rendering of at most the first 64 characters of `value`: anything
/// but ASCII letters, digits, `-`, `_` and `.` becomes `?`, so control characters, quotes
/// and terminal escapes never reach a log line or an error message.
pub fn sanitized_prefix(value: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let mut out: String = value
        .chars()
        .take(ECHO_LIMIT)
        .map(|c| if keep(c) { c } else { '?' })
        .collect();
    if value.chars().nth(ECHO_LIMIT).is_some() {
        out.push_str("...");
    }
    format!("\"{out}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_accepted_unchanged() {
        let max = format!("a{}", "b".repeat(62));
        for name in ["a", "web-1", "node-a1b2", "x0", "a-b-c", max.as_str()] {
            let parsed = NodeName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(parsed.as_str(), name);
        }
    }

    #[test]
    fn invalid_names_are_rejected_with_the_rule_they_break() {
        let too_long = format!("a{}", "b".repeat(63));
        let cases: &[(&str, &str)] = &[
            ("", "is required"),
            (&too_long, "too long"),
            ("Web-1", "start with a lowercase letter"),
            ("webServer", "only lowercase letters"),
            ("1web", "start with a lowercase letter"),
            ("-web", "start with a lowercase letter"),
            ("web-", "must not end with a hyphen"),
            ("web_1", "only lowercase letters"),
            ("web.example", "only lowercase letters"),
            ("web 1", "only lowercase letters"),
            ("nöde", "must be ASCII"),
            ("ｗｅｂ", "must be ASCII"),
            ("web\u{0}", "only lowercase letters"),
            ("'; DROP TABLE x;--", "start with a lowercase letter"),
            ("a'; DROP TABLE x;--", "only lowercase letters"),
        ];
        for (input, rule) in cases {
            let err = NodeName::parse(input).expect_err(input);
            assert_eq!(err.field, "name", "{input:?}");
            assert!(err.message.contains(rule), "{input:?}: {err}");
        }
    }

    #[test]
    fn a_name_of_63_characters_passes_and_64_fails() {
        assert!(NodeName::parse(&"a".repeat(63)).is_ok());
        assert!(NodeName::parse(&"a".repeat(64)).is_err());
    }

    #[test]
    fn the_error_names_the_field_it_was_given() {
        let err = NodeName::parse_as("Bad", "node_name").expect_err("uppercase");
        assert_eq!(err.field, "node_name");
        assert!(err.to_string().starts_with("node_name: "), "{err}");
    }

    #[test]
    fn the_error_echoes_only_a_sanitized_64_character_prefix() {
        let huge = format!("A{}", "x".repeat(1 << 20));
        let err = NodeName::parse(&huge).expect_err("too long");
        assert!(
            err.message.len() < 200,
            "message is {} bytes",
            err.message.len()
        );

        let err = NodeName::parse("A\u{1b}[31m'\"\n").expect_err("escape codes");
        assert!(
            !err.message.contains('\u{1b}') && !err.message.contains('\n'),
            "{err}"
        );
        assert!(err.message.starts_with("\"A??31m???\" "), "{err}");
    }

    #[test]
    fn a_sql_injection_attempt_is_rejected_without_quotes_in_the_message() {
        let err = NodeName::parse_as("'; DROP TABLE x;--", "node_name").expect_err("sql");
        assert!(!err.message.contains('\''), "{err}");
        assert!(!err.message.contains(';'), "{err}");
    }
}
