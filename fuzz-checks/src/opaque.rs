//! Tests of whether a text repeats submitted values, made so that the fuzzer can neither
//! learn from them nor be fooled by fixed text.
//!
//! - libFuzzer traces comparisons and feeds what it saw compared into its mutations; a plain
//!   `message.contains(value)` would teach it the text of an error message. Comparing
//!   SHA-256 digests of every window shows it nothing but digests.
//! - A value may equal fixed text of a message (a validator compares a field with a pinned
//!   URL, the fuzzer learns the URL and submits it in another field, whose error quotes the
//!   pinned URL). So a value found in an error counts as repeated only if, with one of its
//!   characters changed in the input, the error then holds the changed value: an echo.
use sha2::{Digest as _, Sha256};

/// The shortest value checked: shorter ones occur in any text by chance.
const MIN_LEN: usize = 8;

/// Whether `haystack` contains `needle`.
pub(crate) fn contains(haystack: &str, needle: &str) -> bool {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return false;
    }
    let target = Sha256::digest(n);
    h.windows(n.len()).any(|w| Sha256::digest(w) == target)
}

/// Panics when `text` (a `Debug` rendering) contains one of `secrets`.
pub(crate) fn assert_hides(text: &str, secrets: &[&str], what: &str) {
    for secret in secrets
        .iter()
        .map(|s| s.trim())
        .filter(|s| s.len() >= MIN_LEN)
    {
        assert!(!contains(text, secret), "{what} shows a secret value");
    }
}

/// Panics when the error `error_of(fields)` gives echoes one of `values` (strings the
/// fields hold, or hold inside a document). `error_of` builds the input from the fields and
/// returns its error text, `None` when the input is accepted.
pub(crate) fn assert_no_echo(
    fields: &[String],
    values: &[String],
    what: &str,
    error_of: impl Fn(&[String]) -> Option<String>,
) {
    let Some(error) = error_of(fields) else {
        return;
    };
    for value in values
        .iter()
        .map(|v| v.trim())
        .filter(|v| v.len() >= MIN_LEN)
    {
        if !contains(&error, value) {
            continue;
        }
        let changed = with_last_char_changed(value);
        let probe: Vec<String> = fields.iter().map(|f| f.replace(value, &changed)).collect();
        if let Some(again) = error_of(&probe) {
            // The fuzzer's inputs are no one's secrets: the message is shown to debug.
            assert!(
                !contains(&again, &changed),
                "{what} repeats a submitted value: {again}"
            );
        }
    }
}

/// `value` with its last character replaced by another of the same kind (digit, lowercase,
/// uppercase, other), so the input most likely takes the same path.
fn with_last_char_changed(value: &str) -> String {
    let mut chars: Vec<char> = value.chars().collect();
    if let Some(last) = chars.last_mut() {
        *last = match *last {
            '0'..='8' | 'a'..='y' | 'A'..='Y' => char::from_u32(*last as u32 + 1).unwrap_or('0'),
            '9' => '0',
            'z' => 'a',
            'Z' => 'A',
            '-' => '_',
            _ => '-',
        };
    }
    chars.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_is_there_only() {
        assert!(contains("invalid token abcdefgh here", "abcdefgh"));
        assert!(!contains("invalid token", "abcdefgh"));
        assert!(!contains("short", "longer than short"));
        assert!(!contains("anything", ""));
    }

    fn echoing(fields: &[String]) -> Option<String> {
        Some(format!("bad value {}", fields[0]))
    }

    fn fixed(_: &[String]) -> Option<String> {
        Some("must be https://sts.googleapis.com/v1/token".into())
    }

    #[test]
    #[should_panic(expected = "repeats a submitted value")]
    fn an_echo_is_caught() {
        let fields = vec!["secret-value-123".to_owned()];
        assert_no_echo(&fields, &fields, "error", echoing);
    }

    #[test]
    fn a_value_equal_to_fixed_text_is_not_an_echo() {
        let fields = vec!["https://sts.googleapis.com/v1/token".to_owned()];
        assert_no_echo(&fields, &fields, "error", fixed);
    }

    #[test]
    #[should_panic(expected = "shows a secret value")]
    fn a_shown_secret_is_caught() {
        assert_hides(
            "Token { token: hunter2hunter2 }",
            &["hunter2hunter2"],
            "Debug",
        );
    }
}
