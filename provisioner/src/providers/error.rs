//! Provider errors, classified into the few kinds a caller acts on. The provider's own
//! error code and message are kept (clipped, single line); raw bodies and secrets never are.
use std::fmt;
use std::time::Duration;

use super::ProviderId;

/// What kind of failure, for callers to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The resource does not exist.
    NotFound,
    /// The credential was refused (401/403).
    Unauthorized,
    /// Throttled (after honouring `Retry-After` within the retry budget).
    RateLimited,
    /// Out of capacity / quota / resource unavailable in that location.
    CapacityUnavailable,
    /// The request was rejected as invalid (4xx other than the above).
    InvalidRequest,
    /// The provider could not be reached or answered 5xx / timed out.
    Unavailable,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// Stable snake_case word for logs and APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::CapacityUnavailable => "capacity_unavailable",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Other => "other",
        }
    }
}

/// A classified provider failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The cloud.
    pub provider: ProviderId,
    /// The kind.
    pub kind: ErrorKind,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    /// The provider's error code (`uniqueness_error`, `unprocessable_entity`, …).
    pub code: String,
    /// The provider's message: one line, at most 300 characters.
    pub message: String,
    /// How long the provider asked us to wait, when it did.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    /// A new error; `message` is clipped to one line of at most 300 characters.
    pub fn new(
        provider: ProviderId,
        kind: ErrorKind,
        code: impl Into<String>,
        message: &str,
    ) -> Self {
        Self {
            provider,
            kind,
            status: None,
            code: code.into(),
            message: clip(message),
            retry_after: None,
        }
    }

    /// With the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Whether retrying the same idempotent request may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, ErrorKind::Unavailable | ErrorKind::RateLimited)
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.provider, self.kind.as_str())?;
        if !self.code.is_empty() {
            write!(f, " ({})", self.code)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

/// One line, printable, at most 300 characters.
pub fn clip(message: &str) -> String {
    let line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect();
    line.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_clipped_to_one_short_line() {
        let e = ProviderError::new(
            ProviderId::Hetzner,
            ErrorKind::Other,
            "x",
            &"a\nb".repeat(400),
        );
        assert!(!e.message.contains('\n'));
        assert_eq!(e.message.chars().count(), 300);
        assert_eq!(
            ProviderError::new(
                ProviderId::Hetzner,
                ErrorKind::NotFound,
                "not_found",
                "gone"
            )
            .to_string(),
            "hetzner not_found (not_found): gone"
        );
    }
}
