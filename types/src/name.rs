//! The node-name rule, written once for the server, the CLI and the web form: an RFC
//! 1123-style DNS label restricted to lowercase ASCII (`^[a-z][a-z0-9-]*$`, 1..=63
//! characters, no trailing hyphen), the strictest rule shared by every target cloud and by
//! Kubernetes. Each caller words the broken rule its own way (an API field error, a CLI
//! usage error, a hint beside the form field).

/// The longest name accepted (a DNS label).
pub const MAX_NODE_NAME_LEN: usize = 63;

/// The first rule a refused node name breaks, in the order they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Nothing was given.
    Empty,
    /// Longer than [`MAX_NODE_NAME_LEN`].
    TooLong,
    /// A character outside ASCII.
    NotAscii,
    /// It does not start with `a`–`z`.
    BadStart,
    /// A character other than `a`–`z`, `0`–`9` or `-`.
    BadCharacter,
    /// It ends with `-`.
    TrailingHyphen,
}

/// Checks `value` against the node-name rule.
pub fn check_node_name(value: &str) -> Result<(), NameRule> {
    if value.is_empty() {
        return Err(NameRule::Empty);
    }
    if value.len() > MAX_NODE_NAME_LEN {
        return Err(NameRule::TooLong);
    }
    if !value.is_ascii() {
        return Err(NameRule::NotAscii);
    }
    if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(NameRule::BadStart);
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(NameRule::BadCharacter);
    }
    if value.ends_with('-') {
        return Err(NameRule::TrailingHyphen);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_pass_and_each_broken_rule_is_named() {
        let max = format!("a{}", "b".repeat(62));
        for ok in ["a", "web-1", "x0", max.as_str()] {
            assert_eq!(check_node_name(ok), Ok(()), "{ok}");
        }
        let cases = [
            ("", NameRule::Empty),
            (&*"a".repeat(64), NameRule::TooLong),
            ("wéb", NameRule::NotAscii),
            ("1web", NameRule::BadStart),
            ("Web", NameRule::BadStart),
            ("web_1", NameRule::BadCharacter),
            ("web-", NameRule::TrailingHyphen),
        ];
        for (name, rule) in cases {
            assert_eq!(check_node_name(name), Err(rule), "{name:?}");
        }
    }
}
