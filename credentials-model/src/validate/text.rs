//! Character-class and length checks shared by the per-provider validators. Every message
//! describes the rule that failed, never the offending value.
use super::{FieldError, MAX_INPUT_BYTES};

/// Rejects an input string longer than [`MAX_INPUT_BYTES`], before anything else looks at it.
pub(super) fn check_size(field: &str, raw: &str) -> Result<(), FieldError> {
    check_len(field, raw, MAX_INPUT_BYTES)
}

/// Rejects a value longer than `max` bytes.
pub(super) fn check_len(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    if value.len() > max {
        return Err(FieldError::new(
            field,
            format!("must be at most {max} bytes"),
        ));
    }
    Ok(())
}

/// The error for a required value that is empty.
pub(super) fn empty(field: &str) -> FieldError {
    FieldError::new(field, "must not be empty")
}

/// Size-checks a raw token-like input and trims surrounding ASCII whitespace (a trailing
/// newline from piped input); what is left must be non-empty printable ASCII without spaces.
pub(super) fn trimmed_token<'a>(field: &str, raw: &'a str) -> Result<&'a str, FieldError> {
    check_size(field, raw)?;
    let token = raw.trim_ascii();
    if token.is_empty() {
        return Err(empty(field));
    }
    require_graphic(field, token)?;
    Ok(token)
}

/// Requires printable ASCII with no whitespace (`!`..=`~`).
pub(super) fn require_graphic(field: &str, value: &str) -> Result<(), FieldError> {
    require_ascii_text(field, value, false)
}

/// Requires printable ASCII; spaces are allowed, other whitespace and controls are not.
pub(super) fn require_printable(field: &str, value: &str) -> Result<(), FieldError> {
    require_ascii_text(field, value, true)
}

fn require_ascii_text(field: &str, value: &str, allow_space: bool) -> Result<(), FieldError> {
    for c in value.chars() {
        if c.is_ascii_graphic() || (allow_space && c == ' ') {
            continue;
        }
        let problem = if c.is_ascii_whitespace() {
            "must not contain whitespace"
        } else if c.is_control() {
            "must not contain control characters"
        } else {
            // Non-ASCII includes bidi overrides (U+202E) and look-alike letters.
            "must contain only ASCII characters"
        };
        return Err(FieldError::new(field, problem));
    }
    Ok(())
}

/// `len` is within `min..=max` and every byte satisfies `class`.
pub(super) fn all_of(value: &str, min: usize, max: usize, class: fn(u8) -> bool) -> bool {
    (min..=max).contains(&value.len()) && value.bytes().all(class)
}

/// `0-9a-f`.
pub(super) fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// `A-Z0-9`.
pub(super) fn is_upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

/// The base64 alphabet including padding: `A-Za-z0-9/+=`.
pub(super) fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'=')
}

/// A GUID in `8-4-4-4-12` hex form (either case).
pub(super) fn is_guid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A GUID field: printable ASCII first (for a precise message), then the `8-4-4-4-12` shape.
/// Returns the GUID lowercased.
pub(super) fn guid(field: &str, value: &str) -> Result<String, FieldError> {
    if value.is_empty() {
        return Err(empty(field));
    }
    require_graphic(field, value)?;
    if !is_guid(value) {
        return Err(FieldError::new(
            field,
            "must be a GUID (8-4-4-4-12 hexadecimal digits)",
        ));
    }
    Ok(value.to_ascii_lowercase())
}

/// Keys of the providers' credential files that hold digits (a key that looks like a field
/// name has none, see [`shown_key`]).
const FIELD_NAMES_WITH_DIGITS: [&str; 2] = ["auth_provider_x509_cert_url", "client_x509_cert_url"];

/// A JSON object key as a field path shows it: only a key that looks like a field name
/// (1 to 64 characters, ASCII letters and `_`, so `clientId` of another tool's format is
/// named too, or a provider's field name with digits) is shown. Any other key may be a
/// value pasted in the wrong place (a fuzzer found a secret inside a key repeated in an
/// error), so the path stops at the document.
pub fn shown_key(key: &str) -> Option<&str> {
    let name_like = !key.is_empty()
        && key.len() <= 64
        && key.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
    (name_like || FIELD_NAMES_WITH_DIGITS.contains(&key)).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_accepts_both_cases_and_rejects_misplaced_hyphens() {
        assert!(is_guid("0f8fad5b-d9cb-469f-a165-70867728950e"));
        assert!(is_guid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
        assert!(!is_guid("0f8fad5bd-9cb-469f-a165-70867728950e"));
        assert!(!is_guid("0f8fad5b-d9cb-469f-a165-70867728950"));
        assert!(!is_guid("0f8fad5b-d9cb-469f-a165-70867728950g"));
    }

    #[test]
    fn only_keys_that_look_like_field_names_are_shown() {
        assert_eq!(shown_key("client_secret"), Some("client_secret"));
        assert_eq!(shown_key(&"k".repeat(64)), Some("k".repeat(64).as_str()));
        assert_eq!(shown_key("clientId"), Some("clientId"));
        for hidden in ["", "a\u{0}b", "\u{202e}abc", "3f1c0d9e8b7a", "x-y", "a b"] {
            assert_eq!(shown_key(hidden), None, "{hidden:?}");
        }
        assert_eq!(shown_key(&"k".repeat(65)), None);
        assert_eq!(
            shown_key("client_x509_cert_url"),
            Some("client_x509_cert_url")
        );
    }

    #[test]
    fn printable_check_names_the_kind_of_problem() {
        let msg = |v: &str| require_graphic("f", v).unwrap_err().message;
        assert_eq!(msg("a b"), "must not contain whitespace");
        assert_eq!(msg("a\u{7}"), "must not contain control characters");
        assert_eq!(msg("a\u{202e}"), "must contain only ASCII characters");
        assert!(require_printable("f", "a b").is_ok());
        assert!(require_printable("f", "a\tb").is_err());
    }
}
