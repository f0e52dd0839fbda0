//! Server validation errors name a field path (`aws.secret_access_key`,
//! `gcp.json.token_uri`, `name`): the message is `<field.path>: <message>` and the metadata
//! `x-levelrail-field` carries the path. These helpers split the message and decide which
//! input of a form an error belongs beside.

/// Splits `"<field.path>: <message>"` into the path and the message; `None` when the
/// message does not start with a field path.
pub fn split_field_message(message: &str) -> Option<(&str, &str)> {
    let (field, rest) = message.split_once(": ")?;
    let is_path = !field.is_empty()
        && field.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '[' | ']')
        });
    is_path.then_some((field, rest))
}

/// Whether an error about `field` belongs beside the input for `input_path`: the same
/// path, or a path inside it (`gcp.json.token_uri` belongs to the `gcp.json` input, and
/// `ssh_public_keys[0]` to `ssh_public_keys`). Returns the part of the path below the
/// input (empty for an exact match).
pub fn field_below<'a>(field: &'a str, input_path: &str) -> Option<&'a str> {
    let rest = field.strip_prefix(input_path)?;
    if rest.is_empty() {
        return Some("");
    }
    rest.strip_prefix('.')
        .or_else(|| rest.starts_with('[').then_some(rest))
}

/// The text shown beside an input: the server's message, prefixed with the sub-path when
/// the error is about a part of the input's value (`token_uri: must be …`).
pub fn message_beside(field: &str, input_path: &str, message: &str) -> Option<String> {
    let below = field_below(field, input_path)?;
    Some(match below {
        "" => message.to_owned(),
        sub if sub.starts_with('[') => message.to_owned(),
        sub => format!("{sub}: {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_prefixed_message_splits_into_path_and_text() {
        assert_eq!(
            split_field_message("aws.secret_access_key: must be 40 characters"),
            Some(("aws.secret_access_key", "must be 40 characters"))
        );
        assert_eq!(
            split_field_message("ssh_public_keys[0]: not an OpenSSH key"),
            Some(("ssh_public_keys[0]", "not an OpenSSH key"))
        );
        assert_eq!(split_field_message("internal error"), None);
        assert_eq!(split_field_message("No credential: stored"), None);
    }

    #[test]
    fn nested_paths_belong_to_the_enclosing_input() {
        assert_eq!(
            field_below("gcp.json.token_uri", "gcp.json"),
            Some("token_uri")
        );
        assert_eq!(field_below("hetzner.token", "hetzner.token"), Some(""));
        assert_eq!(
            field_below("ssh_public_keys[0]", "ssh_public_keys"),
            Some("[0]")
        );
        assert_eq!(field_below("aws.region", "aws.role_arn"), None);
        assert_eq!(field_below("names", "name"), None);
    }

    #[test]
    fn the_message_beside_an_input_keeps_the_sub_path() {
        assert_eq!(
            message_beside("gcp.json.token_uri", "gcp.json", "must be Google's").as_deref(),
            Some("token_uri: must be Google's")
        );
        assert_eq!(
            message_beside("name", "name", "already used").as_deref(),
            Some("already used")
        );
    }
}
