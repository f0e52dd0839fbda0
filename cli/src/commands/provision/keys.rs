//! `--ssh-public-key KEY|@FILE`: OpenSSH public keys given inline or read from a file (one
//! per line, `authorized_keys` style, blank and `#` lines skipped). Each key is checked for
//! shape before it is sent: a key ends up in a cloud-init document, so a stray newline or a
//! pasted private key must stop here. Errors never echo a key.
use std::path::PathBuf;

use crate::error::CliError;

const FLAG: &str = "--ssh-public-key";

/// The key types OpenSSH accepts in `authorized_keys` today (DSA is gone since 9.8).
const KEY_TYPES: [&str; 7] = [
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Every key of every `--ssh-public-key` value, in order.
pub(crate) fn collect(values: &[String]) -> Result<Vec<String>, CliError> {
    let mut keys = Vec::new();
    for value in values {
        match value.strip_prefix('@') {
            Some(path) => keys.extend(read_file(path)?),
            None => {
                let key = value.trim();
                if key.contains(['\n', '\r']) {
                    return Err(CliError::usage(format!(
                        "invalid {FLAG}: one key per flag on one line; use {FLAG} @FILE for \
                         a file of keys"
                    )));
                }
                check(key)
                    .map_err(|reason| CliError::usage(format!("invalid {FLAG}: {reason}")))?;
                keys.push(key.to_owned());
            }
        }
    }
    Ok(keys)
}

fn read_file(path: &str) -> Result<Vec<String>, CliError> {
    let resolved = expand_home(path);
    let text = std::fs::read_to_string(&resolved).map_err(|e| {
        CliError::usage(format!(
            "cannot read {FLAG} file {}: {e}",
            resolved.display()
        ))
    })?;
    let mut keys = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        check(line).map_err(|reason| {
            CliError::usage(format!(
                "invalid {FLAG} @{path}, line {}: {reason}",
                number + 1
            ))
        })?;
        keys.push(line.to_owned());
    }
    if keys.is_empty() {
        return Err(CliError::usage(format!(
            "invalid {FLAG} @{path}: the file holds no public key"
        )));
    }
    Ok(keys)
}

/// `@~/.ssh/id_ed25519.pub`: the shell does not expand `~` after `@`, so do it here.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// `<type> <base64 blob> [comment]` with a known type and no control characters.
fn check(key: &str) -> Result<(), &'static str> {
    if key.contains("PRIVATE KEY") {
        return Err("this is a private key; pass the public key (the .pub file)");
    }
    if key.is_empty() {
        return Err("the key is empty");
    }
    if key.chars().any(char::is_control) {
        return Err("the key contains control characters");
    }
    let mut fields = key.split_whitespace();
    let kind = fields.next().unwrap_or_default();
    if !KEY_TYPES.contains(&kind) {
        return Err("want an OpenSSH public key such as \"ssh-ed25519 AAAAC3Nza… me@host\"");
    }
    let blob = fields.next().unwrap_or_default();
    let base64 = blob.len() >= 16
        && blob
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if !base64 {
        return Err("the key data after the type is not base64");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDtWcpG0mVvDhuTqo0M9nXGlqWw0zvKjJr1ZP6xgYpZT me@laptop";

    #[test]
    fn an_inline_key_is_kept_as_given() {
        let keys = collect(&[format!("  {ED25519}\n")]).expect("valid");
        assert_eq!(keys, [ED25519]);
    }

    #[test]
    fn a_file_yields_every_key_and_skips_comments_and_blank_lines() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), format!("# laptop\n{ED25519}\n\n{ED25519} 2\n"))
            .expect("write");
        let arg = format!("@{}", file.path().display());
        assert_eq!(collect(&[arg]).expect("valid").len(), 2);
    }

    #[test]
    fn a_private_key_is_refused_without_echoing_it() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(
            file.path(),
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
        )
        .expect("write");
        let arg = format!("@{}", file.path().display());
        let err = collect(&[arg]).expect_err("private key").to_string();
        assert!(err.contains("line 1: this is a private key"), "{err}");
        assert!(!err.contains("b3BlbnNz"), "{err}");
    }

    #[test]
    fn malformed_keys_name_the_flag() {
        for bad in [
            "",
            "ssh-dss AAAAB3NzaC1kc3MAAACBAP",
            "ssh-ed25519 not*base64!",
            "hello",
        ] {
            let err = collect(&[bad.to_owned()]).expect_err(bad).to_string();
            assert!(err.starts_with("invalid --ssh-public-key: "), "{err}");
        }
        let err = collect(&[format!("{ED25519}\n{ED25519}")]).expect_err("two lines");
        assert!(err.to_string().contains("one key per flag"), "{err}");
    }

    #[test]
    fn an_unreadable_file_names_the_flag_and_the_path() {
        let err = collect(&["@/nonexistent/key.pub".to_owned()]).expect_err("missing");
        assert!(
            err.to_string()
                .starts_with("cannot read --ssh-public-key file /nonexistent/key.pub: "),
            "{err}"
        );
    }
}
