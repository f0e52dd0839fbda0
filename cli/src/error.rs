//! The CLI's one error type: a one-line message for `error: …` on stderr and the exit code
//! that goes with it (2 for usage and input errors, 1 for server and network failures).
use std::fmt;
use std::io::Write;

use clap::error::ErrorKind;

/// A failure that ends the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CliError {
    /// The command line or the input was wrong; retrying as-is will not help. Exit code 2.
    Usage(String),
    /// The control plane refused or could not be reached. Exit code 1.
    Failed(String),
}

impl CliError {
    /// A usage or input error.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    /// A server or network failure.
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// The control plane could not be reached at `api_url`.
    pub(crate) fn unreachable(api_url: &str, reason: &str) -> Self {
        Self::Failed(format!(
            "cannot reach the control plane at {api_url}: {reason}"
        ))
    }

    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Failed(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(message) | Self::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CliError {}

/// The innermost cause of an error chain, which is the short, specific part ("Connection
/// refused (os error 111)") under wrappers such as "transport error".
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// Writes a clap outcome the way the rest of the CLI writes: help and version in full on
/// stdout (exit 0); a parse error as one `error: …` line on stderr (exit 2).
pub(crate) fn report_clap(err: &clap::Error, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    let rendered = err.render().to_string();
    // A broken stdout or stderr leaves nothing better to do than to return the exit code.
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = write!(stdout, "{}", with_newline(&rendered));
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = write!(stderr, "{}", with_newline(&rendered));
            2
        }
        _ => {
            let _ = writeln!(stderr, "{}", one_line(&rendered));
            2
        }
    }
}

fn with_newline(text: &str) -> String {
    let mut text = text.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Folds clap's multi-line error ("error: …", indented details, tips, a usage line and a
/// "--help" hint) into one line, keeping the message and its details and tips.
fn one_line(rendered: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line);
        }
    }
    let Some((first, rest)) = parts.split_first() else {
        return "error: invalid command line".to_owned();
    };
    let mut out = (*first).to_owned();
    for part in rest {
        out.push_str(if part.starts_with("tip:") { "; " } else { " " });
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clap_error_with_details_and_usage_folds_into_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  \
                        --provider <NAME>\n\nUsage: levelrail-cli nodes providers verify \
                        --provider <NAME>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "error: the following required arguments were not provided: --provider <NAME>"
        );
    }

    #[test]
    fn a_clap_tip_is_kept_after_a_semicolon() {
        let rendered = "error: unexpected argument '--provide' found\n\n  tip: a similar \
                        argument exists: '--provider'\n\nUsage: x\n";
        assert_eq!(
            one_line(rendered),
            "error: unexpected argument '--provide' found; tip: a similar argument exists: \
             '--provider'"
        );
    }

    #[test]
    fn usage_errors_exit_2_and_failures_exit_1() {
        assert_eq!(CliError::usage("x").exit_code(), 2);
        assert_eq!(CliError::failed("x").exit_code(), 1);
    }
}
