//! Why a step stopped: a `Failure` fails the provision (and unwinds it) with a clean
//! one-line reason; a `Halt` stops this driver but leaves the provision for another one
//! (lease lost, store down, simulated crash).
use std::time::Duration;

use crate::model::provision::{FailureNote, ProvisionStatus, format_duration};
use levelrail_clouds::error::clip;
use levelrail_clouds::{ErrorKind, ProviderError};

/// The longest provider message quoted in a reason.
const MESSAGE_LIMIT: usize = 160;

/// A provision failure: the phase it happened in, one clean line, the provider's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) phase: ProvisionStatus,
    pub(crate) reason: String,
    pub(crate) code: Option<String>,
    pub(crate) cancelled: bool,
}

impl Failure {
    /// A failure in `phase` for `reason` (clipped to one line).
    pub(crate) fn new(phase: ProvisionStatus, reason: impl AsRef<str>) -> Self {
        Failure {
            phase,
            reason: clip(reason.as_ref()),
            code: None,
            cancelled: false,
        }
    }

    /// A provider call failed while doing `action`: `could not create the server: capacity
    /// unavailable in fsn1 (resource_unavailable)`.
    pub(crate) fn provider(
        phase: ProvisionStatus,
        action: &str,
        e: &ProviderError,
        region: &str,
    ) -> Self {
        let mut f = Failure::new(phase, format!("{action}: {}", describe(e, region)));
        f.code = Some(e.code.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| Some(e.kind.as_str().to_owned()));
        f
    }

    /// The provision did not finish within `timeout`.
    pub(crate) fn timeout(phase: ProvisionStatus, timeout: Duration, code: Option<String>) -> Self {
        let mut f = Failure::new(
            phase,
            format!(
                "timed out after {} while {}",
                format_duration(timeout),
                phase.as_str()
            ),
        );
        f.code = code;
        f
    }

    /// The operator cancelled it.
    pub(crate) fn cancelled(phase: ProvisionStatus) -> Self {
        Failure {
            cancelled: true,
            ..Failure::new(phase, "cancelled by operator")
        }
    }

    /// As persisted in the saga log while unwinding.
    pub(crate) fn note(&self) -> FailureNote {
        FailureNote {
            phase: self.phase.as_str().to_owned(),
            reason: self.reason.clone(),
            code: self.code.clone(),
            cancelled: self.cancelled,
        }
    }
}

/// A provider error for an operator: the kind in words (with the region where it matters),
/// the provider's clipped message for rejected requests, and the provider's code.
pub(crate) fn describe(e: &ProviderError, region: &str) -> String {
    let what = match e.kind {
        ErrorKind::CapacityUnavailable => format!("capacity unavailable in {region}"),
        ErrorKind::Unauthorized => "the provider refused the stored credential".to_owned(),
        ErrorKind::RateLimited => "the provider's rate limit was reached".to_owned(),
        ErrorKind::Unavailable => "the provider could not be reached".to_owned(),
        ErrorKind::NotFound => "the resource does not exist at the provider".to_owned(),
        ErrorKind::InvalidRequest | ErrorKind::Other if !e.message.is_empty() => {
            e.message.chars().take(MESSAGE_LIMIT).collect()
        }
        ErrorKind::InvalidRequest => "the provider rejected the request".to_owned(),
        ErrorKind::Other => "the provider reported an error".to_owned(),
    };
    if e.code.is_empty() {
        what
    } else {
        format!("{what} ({})", e.code)
    }
}

/// Why a driver stops without failing the provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Halt {
    /// A test hook simulated a crash: leave everything as it is, lease included.
    Crashed,
    /// Another driver owns the provision now.
    LeaseLost,
    /// The provision is gone or already finished elsewhere.
    Finished,
    /// The store kept failing; the lease will expire and a driver resume it.
    StoreUnavailable(String),
}

/// The outcome of a failed step.
#[derive(Debug)]
pub(crate) enum StepError {
    /// Fail the provision and unwind.
    Fail(Failure),
    /// Stop driving.
    Halt(Halt),
}

impl From<Halt> for StepError {
    fn from(h: Halt) -> Self {
        StepError::Halt(h)
    }
}

impl From<Failure> for StepError {
    fn from(f: Failure) -> Self {
        StepError::Fail(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use levelrail_types::ProviderId;

    #[test]
    fn a_capacity_error_names_the_region_and_the_code_and_nothing_raw() {
        let e = ProviderError::new(
            ProviderId::Hetzner,
            ErrorKind::CapacityUnavailable,
            "resource_unavailable",
            "{\"error\":{\"code\":\"resource_unavailable\",\"message\":\"…\"}}",
        );

        let f = Failure::provider(
            ProvisionStatus::Creating,
            "could not create the server",
            &e,
            "fsn1",
        );

        assert_eq!(
            f.reason,
            "could not create the server: capacity unavailable in fsn1 (resource_unavailable)"
        );
        assert_eq!(f.code.as_deref(), Some("resource_unavailable"));
    }

    #[test]
    fn rejected_requests_quote_a_clipped_single_line_message() {
        let e = ProviderError::new(
            ProviderId::DigitalOcean,
            ErrorKind::InvalidRequest,
            "unprocessable_entity",
            &"bad size\n".repeat(100),
        );
        let f = Failure::provider(
            ProvisionStatus::Creating,
            "could not create the server",
            &e,
            "nyc3",
        );
        assert!(!f.reason.contains('\n'));
        assert!(f.reason.len() < 260, "{}", f.reason);
        assert!(f.reason.ends_with("(unprocessable_entity)"), "{}", f.reason);
    }

    #[test]
    fn a_timeout_names_the_phase() {
        let f = Failure::timeout(ProvisionStatus::Booting, Duration::from_secs(1200), None);
        assert_eq!(f.reason, "timed out after 20m while booting");
        assert_eq!(
            Failure::cancelled(ProvisionStatus::Creating).reason,
            "cancelled by operator"
        );
    }
}
