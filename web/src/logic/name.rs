//! Node-name rules, checked as the operator types: `^[a-z][a-z0-9-]*$`, at most 63
//! characters, no trailing hyphen (the server enforces the same; GCP and Azure need them).

use levelrail_types::{NameRule, check_node_name};

/// Longest accepted node name.
pub const MAX_NAME_LEN: usize = levelrail_types::MAX_NODE_NAME_LEN;

/// Why a node name is refused, in words for the form; `None` when it is valid. Empty is
/// not reported while typing; [`name_problem_required`] reports it on submit.
pub fn name_problem(name: &str) -> Option<&'static str> {
    match check_node_name(name).err()? {
        NameRule::Empty => None,
        NameRule::BadStart => Some("Start with a lowercase letter (a–z)."),
        NameRule::NotAscii | NameRule::BadCharacter => {
            Some("Use only lowercase letters, digits and hyphens.")
        }
        NameRule::TooLong => Some("Use at most 63 characters."),
        NameRule::TrailingHyphen => Some("Do not end the name with a hyphen."),
    }
}

/// Like [`name_problem`], but an empty name is a problem too (for submitting).
pub fn name_problem_required(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("Enter a name.");
    }
    name_problem(name)
}

/// A valid default name from provider and region (`hetzner-fsn1`), or empty when nothing
/// valid can be made of them.
pub fn suggest_name(provider: &str, region: &str) -> String {
    let raw = format!("{provider}-{region}").to_ascii_lowercase();
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(c);
    }
    out.truncate(MAX_NAME_LEN);
    while out.ends_with('-') {
        out.pop();
    }
    match name_problem(&out) {
        None => out,
        Some(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_pass() {
        for ok in ["a", "web-1", "build-node-2", &"a".repeat(63)] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn each_broken_rule_names_its_problem() {
        assert_eq!(
            name_problem("1web"),
            Some("Start with a lowercase letter (a–z).")
        );
        assert_eq!(
            name_problem("Web"),
            Some("Start with a lowercase letter (a–z).")
        );
        assert_eq!(
            name_problem("web_1"),
            Some("Use only lowercase letters, digits and hyphens.")
        );
        assert_eq!(
            name_problem(&"a".repeat(64)),
            Some("Use at most 63 characters.")
        );
        assert_eq!(
            name_problem("web-"),
            Some("Do not end the name with a hyphen.")
        );
    }

    #[test]
    fn an_empty_name_is_quiet_while_typing_but_required_on_submit() {
        assert_eq!(name_problem(""), None);
        assert_eq!(name_problem_required(""), Some("Enter a name."));
    }

    #[test]
    fn suggested_names_are_valid() {
        assert_eq!(suggest_name("hetzner", "fsn1"), "hetzner-fsn1");
        assert_eq!(suggest_name("gcp", "europe-west1-b"), "gcp-europe-west1-b");
        assert_eq!(suggest_name("azure", "West Europe"), "azure-west-europe");
        assert_eq!(suggest_name("", "--"), "");
    }
}
