//! Exit codes and the one caller-facing error of the agent.
//!
//! Every way the agent can stop maps to one [`ExitCode`], so a systemd unit, the simulated
//! clouds and operators' scripts can tell a bad token from an unreachable control plane
//! without parsing text. The codes are part of the interface: never renumber them.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | ok (`--once` finished, or stopped by SIGTERM / Ctrl-C) |
//! | 1 | unexpected error (I/O writing the identity, a malformed control-plane answer, …) |
//! | 2 | configuration error; the message names the variable (or the env-file line) |
//! | 3 | the control plane's certificate does not chain to the pinned CA (nothing was sent), or the configured pins disagree |
//! | 4 | join token expired |
//! | 5 | join token already used (including losing a concurrent redemption) |
//! | 6 | join token revoked |
//! | 7 | join token unknown, not valid for this node name, or malformed |
//! | 8 | control plane unreachable after retries (`APP_ENROLL_RETRY_SECONDS`) |
//! | 9 | the node was removed from the control plane (heartbeat refused) |
//! | 10 | the node name is already taken |
//!
//! Messages are one line and never contain the join token, its secret or key material;
//! the token id (`njt_…`) is safe to print and is the only token detail they carry.

use std::path::PathBuf;

/// The process exit codes of `levelrail-agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ExitCode {
    /// Finished normally.
    Ok = 0,
    /// An error no other code describes.
    Unexpected = 1,
    /// Configuration error.
    Config = 2,
    /// CA pin mismatch.
    PinMismatch = 3,
    /// Join token expired.
    TokenExpired = 4,
    /// Join token already used.
    TokenUsed = 5,
    /// Join token revoked.
    TokenRevoked = 6,
    /// Join token unknown, not valid for this node name, or malformed.
    TokenInvalid = 7,
    /// Control plane unreachable after retries.
    Unreachable = 8,
    /// Node removed from the control plane.
    NodeRemoved = 9,
    /// Node name already taken.
    NameTaken = 10,
}

impl ExitCode {
    /// The numeric process exit status.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The exit-code table shown by `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   ok (--once finished, or stopped by SIGTERM/Ctrl-C)
  1   unexpected error
  2   configuration error (the message names the variable)
  3   CA pin mismatch: the control plane's certificate does not chain to the pinned CA
  4   join token expired
  5   join token already used
  6   join token revoked
  7   join token unknown, not valid for this node name, or malformed
  8   control plane unreachable after retries (APP_ENROLL_RETRY_SECONDS)
  9   node was removed from the control plane (heartbeat refused)
  10  node name already taken";

/// Everything that stops the agent. `Display` is the one-line message printed on stderr.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A variable is missing or invalid.
    #[error("configuration error: {var}: {problem}")]
    Config {
        /// The variable concerned (or a `A or B` pair).
        var: &'static str,
        /// What is wrong, never echoing a secret value.
        problem: String,
    },
    /// A line of the env file is not `KEY=VALUE`.
    #[error("configuration error: env file {}, line {line}: {problem}", path.display())]
    EnvFile {
        /// The env file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong; the line's content is never echoed.
        problem: &'static str,
    },
    /// The server chain does not chain to the pinned CA; nothing was sent.
    #[error(
        "control plane certificate does not match the pinned CA fingerprint; refusing to send the join token"
    )]
    PinMismatch,
    /// Same as [`AgentError::PinMismatch`], for an enrolled node (no token involved).
    #[error(
        "control plane certificate does not match the CA pinned in the node identity; refusing to connect"
    )]
    IdentityPinMismatch,
    /// `APP_CA_FINGERPRINT` and the fingerprint inside the join token differ.
    #[error(
        "APP_CA_FINGERPRINT does not match the CA fingerprint carried by the join token; refusing to send the join token"
    )]
    PinConflict,
    /// The control plane says the token was minted for another CA.
    #[error("join token {token_id} was issued for another control-plane CA")]
    TokenWrongCa { token_id: String },
    /// The token expired before it was redeemed.
    #[error("join token {token_id} has expired; create a new one")]
    TokenExpired { token_id: String },
    /// The token was already redeemed.
    #[error("join token {token_id} was already used")]
    TokenUsed { token_id: String },
    /// The token was revoked.
    #[error("join token {token_id} was revoked")]
    TokenRevoked { token_id: String },
    /// The control plane refused the token for another reason.
    #[error("join token {token_id} was rejected: {why}")]
    TokenRejected {
        token_id: String,
        /// Why, in words (no secret).
        why: String,
    },
    /// The token string does not have the `LR1.<fp>.<id>.<secret>` shape.
    #[error("join token is malformed: {0}")]
    TokenMalformed(&'static str),
    /// Connecting or enrolling kept failing for the whole retry budget.
    #[error("control plane {addr} unreachable after {seconds}s of retries: {last_error}")]
    Unreachable {
        /// The address dialled.
        addr: String,
        /// The retry budget spent.
        seconds: u64,
        /// The last failure seen.
        last_error: String,
    },
    /// Heartbeats are refused: the node no longer exists on the control plane.
    #[error(
        "node {node_id} was removed from the control plane (heartbeat refused: {reason}); delete {} and enroll with a new join token",
        identity_file.display()
    )]
    NodeRemoved {
        node_id: String,
        /// The gRPC status seen.
        reason: String,
        /// The identity file to delete before enrolling again.
        identity_file: PathBuf,
    },
    /// Another node already uses this name.
    #[error("node name {name} is already taken on the control plane")]
    NameTaken {
        /// The node name.
        name: String,
    },
    /// Anything else.
    #[error("{0}")]
    Unexpected(String),
}

impl AgentError {
    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> ExitCode {
        use AgentError as E;
        match self {
            E::Config { .. } | E::EnvFile { .. } => ExitCode::Config,
            E::PinMismatch | E::IdentityPinMismatch | E::PinConflict | E::TokenWrongCa { .. } => {
                ExitCode::PinMismatch
            }
            E::TokenExpired { .. } => ExitCode::TokenExpired,
            E::TokenUsed { .. } => ExitCode::TokenUsed,
            E::TokenRevoked { .. } => ExitCode::TokenRevoked,
            E::TokenRejected { .. } | E::TokenMalformed(_) => ExitCode::TokenInvalid,
            E::Unreachable { .. } => ExitCode::Unreachable,
            E::NodeRemoved { .. } => ExitCode::NodeRemoved,
            E::NameTaken { .. } => ExitCode::NameTaken,
            E::Unexpected(_) => ExitCode::Unexpected,
        }
    }

    /// The message as exactly one line (line breaks of nested errors become spaces).
    pub fn one_line(&self) -> String {
        self.to_string()
            .split(['\n', '\r'])
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A configuration error for `var`.
    pub(crate) fn config(var: &'static str, problem: impl Into<String>) -> Self {
        AgentError::Config {
            var,
            problem: problem.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ExitCode; 11] = [
        ExitCode::Ok,
        ExitCode::Unexpected,
        ExitCode::Config,
        ExitCode::PinMismatch,
        ExitCode::TokenExpired,
        ExitCode::TokenUsed,
        ExitCode::TokenRevoked,
        ExitCode::TokenInvalid,
        ExitCode::Unreachable,
        ExitCode::NodeRemoved,
        ExitCode::NameTaken,
    ];

    #[test]
    fn exit_codes_are_distinct_and_all_listed_in_the_help_text() {
        let codes: std::collections::HashSet<u8> = ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes.len(), ALL.len());
        for code in codes {
            assert!(
                EXIT_CODES_HELP.contains(&format!("\n  {code} ")),
                "code {code} missing"
            );
        }
    }

    #[test]
    fn the_pin_mismatch_message_is_the_documented_one_line() {
        let e = AgentError::PinMismatch;
        assert_eq!(e.exit_code().code(), 3);
        assert_eq!(
            e.one_line(),
            "control plane certificate does not match the pinned CA fingerprint; refusing to send the join token"
        );
    }

    #[test]
    fn one_line_joins_nested_line_breaks() {
        let e = AgentError::Unexpected("first\nsecond\r\nthird".into());
        assert_eq!(e.one_line(), "first second third");
    }
}
