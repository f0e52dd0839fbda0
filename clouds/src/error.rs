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

/// What a failure means for the caller's next step, beyond its kind. It is decided once,
/// from the provider's error code, when the error is made ([`Reason::of`], which asks the
/// cloud's own table: the only place provider codes are compared), so control flow never
/// branches on a provider's strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reason {
    /// Nothing more than the kind says.
    #[default]
    Unspecified,
    /// The name, key or rule already exists (GCP `alreadyExists`, AWS `*.Duplicate`,
    /// Hetzner `uniqueness_error`).
    AlreadyExists,
    /// An idempotency token was reused with other parameters (AWS
    /// `IdempotentParameterMismatch`).
    IdempotencyMismatch,
    /// A dry run would have succeeded (AWS `DryRunOperation`).
    DryRunPassed,
    /// The request's fields were refused after it was authorized (Hetzner `invalid_input`).
    InvalidInput,
    /// The resource is still used or locked by another (Hetzner `resource_in_use`,
    /// `conflict`, `locked`; AWS `DependencyViolation`): retry once that ends.
    InUse,
    /// The answer could not be read: the request may or may not have been processed.
    UnexpectedResponse,
    /// The account lacks a piece of set-up the client needs (a default network, a
    /// subscription-scope reader, the resource group): a finding, not a refused credential.
    AccountSetup,
    /// The grant (an exchanged token or a session) expired or is no longer accepted (AWS
    /// `ExpiredToken` / `RequestExpired`, Azure `ExpiredAuthenticationToken`, Google
    /// `authError`): a fresh grant may succeed.
    GrantExpired,
    /// The zone or subnet asked for cannot take the server now (AWS
    /// `InsufficientInstanceCapacity`, `Unsupported`, `InsufficientFreeAddressesInSubnet`):
    /// another zone of the same region may.
    ZonalCapacity,
}

impl Reason {
    /// The reason of `code` from `provider` (codes of this client's own making included).
    pub fn of(provider: ProviderId, code: &str) -> Reason {
        match code {
            // Every client's own code for an answer it could not read.
            "unexpected_response" => Reason::UnexpectedResponse,
            _ => (crate::cloud_of(provider).reason)(code),
        }
    }
}

/// A classified provider failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The cloud.
    pub provider: ProviderId,
    pub kind: ErrorKind,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    /// The provider's error code (`uniqueness_error`, `unprocessable_entity`, …), or the
    /// client's name for a failure without one (`http_503`, `timeout`); never empty from
    /// the clients.
    pub code: String,
    /// The provider's message: one line, at most 300 characters.
    pub message: String,
    /// How long the provider asked us to wait, when it did.
    pub retry_after: Option<Duration>,
    /// What it means beyond its kind (from `code`).
    pub reason: Reason,
}

impl ProviderError {
    /// A new error; `message` is clipped to one line of at most 300 characters.
    pub fn new(
        provider: ProviderId,
        kind: ErrorKind,
        code: impl Into<String>,
        message: &str,
    ) -> Self {
        let code = code.into();
        Self {
            provider,
            kind,
            status: None,
            reason: Reason::of(provider, &code),
            code,
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

    /// Whether the grant itself was refused (HTTP 401, or an expired token or session):
    /// the same call with a freshly issued grant may succeed. A 403 (forbidden) is not.
    pub fn is_grant_refused(&self) -> bool {
        self.kind == ErrorKind::Unauthorized
            && (self.status == Some(401) || self.reason == Reason::GrantExpired)
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
    fn reasons_come_from_the_code_once() {
        let e = |p, code| ProviderError::new(p, ErrorKind::InvalidRequest, code, "").reason;
        assert_eq!(e(ProviderId::Gcp, "alreadyExists"), Reason::AlreadyExists);
        assert_eq!(
            e(ProviderId::Hetzner, "uniqueness_error"),
            Reason::AlreadyExists
        );
        assert_eq!(
            e(ProviderId::Aws, "InvalidGroup.Duplicate"),
            Reason::AlreadyExists
        );
        assert_eq!(e(ProviderId::Aws, "DryRunOperation"), Reason::DryRunPassed);
        assert_eq!(e(ProviderId::Aws, "DependencyViolation"), Reason::InUse);
        assert_eq!(e(ProviderId::Aws, "RequestExpired"), Reason::GrantExpired);
        assert_eq!(
            e(ProviderId::Azure, "ExpiredAuthenticationToken"),
            Reason::GrantExpired
        );
        assert_eq!(e(ProviderId::Aws, "Unsupported"), Reason::ZonalCapacity);
        assert_eq!(
            e(ProviderId::Aws, "InsufficientInstanceCapacity"),
            Reason::ZonalCapacity
        );
        // A code means something only from the provider that defines it.
        assert_eq!(e(ProviderId::Hetzner, "alreadyExists"), Reason::Unspecified);
        assert_eq!(e(ProviderId::Gcp, "uniqueness_error"), Reason::Unspecified);
    }

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
