//! Classification of Compute Engine errors: the API answers
//! `{"error": {"code", "message", "status", "errors": [{"reason", "message"}]}}`; the first
//! `reason` decides the kind (a 403 may be a rate limit, `rateLimitExceeded`), then `status`,
//! then the HTTP status. Failed operations carry their own codes (`QUOTA_EXCEEDED`,
//! `ZONE_RESOURCE_POOL_EXHAUSTED`, …), classified by [`operation_kind`].
use serde::Deserialize;

use crate::{ErrorKind, Reason};

#[derive(Deserialize)]
struct Envelope {
    error: Option<Body>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    message: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    errors: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    reason: String,
}

/// The `Classifier` of the Compute client: (kind, reason or status, message).
pub(super) fn classify(status: u16, body: &[u8]) -> (ErrorKind, String, String) {
    let parsed = serde_json::from_slice::<Envelope>(body)
        .ok()
        .and_then(|e| e.error);
    let (reason, api_status, message) = match parsed {
        Some(b) => (
            b.errors
                .into_iter()
                .next()
                .map(|i| i.reason)
                .unwrap_or_default(),
            b.status,
            b.message,
        ),
        None => Default::default(),
    };
    let kind = reason_kind(&reason)
        .or_else(|| status_kind(&api_status))
        .unwrap_or_else(|| http_kind(status));
    let code = [reason, api_status]
        .into_iter()
        .find(|c| !c.is_empty())
        .unwrap_or_else(|| format!("http_{status}"));
    let message = if message.is_empty() {
        format!("the Compute Engine API answered HTTP {status}")
    } else {
        message
    };
    (kind, code, message)
}

/// The kind of a failed operation's error code.
pub(super) fn operation_kind(code: &str) -> ErrorKind {
    match code {
        "QUOTA_EXCEEDED"
        | "ZONE_RESOURCE_POOL_EXHAUSTED"
        | "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
        | "RESOURCE_POOL_EXHAUSTED"
        | "STOCKOUT" => ErrorKind::CapacityUnavailable,
        "RESOURCE_NOT_FOUND" => ErrorKind::NotFound,
        "PERMISSIONS_ERROR" | "FORBIDDEN" => ErrorKind::Unauthorized,
        "RATE_LIMIT_EXCEEDED" => ErrorKind::RateLimited,
        "INTERNAL_ERROR" | "SERVICE_UNAVAILABLE" | "RESOURCE_NOT_READY" => ErrorKind::Unavailable,
        "RESOURCE_ALREADY_EXISTS"
        | "INVALID_FIELD_VALUE"
        | "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
        | "CONDITION_NOT_MET"
        | "INVALID_USAGE" => ErrorKind::InvalidRequest,
        _ => ErrorKind::Other,
    }
}

fn reason_kind(reason: &str) -> Option<ErrorKind> {
    Some(match reason {
        "notFound" => ErrorKind::NotFound,
        "forbidden" | "insufficientPermissions" | "authError" | "accessNotConfigured" => {
            ErrorKind::Unauthorized
        }
        "rateLimitExceeded" | "userRateLimitExceeded" => ErrorKind::RateLimited,
        "quotaExceeded" | "limitExceeded" => ErrorKind::CapacityUnavailable,
        "backendError" | "internalError" | "resourceNotReady" => ErrorKind::Unavailable,
        "alreadyExists"
        | "invalid"
        | "required"
        | "badRequest"
        | "conditionNotMet"
        | "resourceInUseByAnotherResource" => ErrorKind::InvalidRequest,
        _ => return None,
    })
}

fn status_kind(status: &str) -> Option<ErrorKind> {
    Some(match status {
        "NOT_FOUND" => ErrorKind::NotFound,
        "PERMISSION_DENIED" | "UNAUTHENTICATED" => ErrorKind::Unauthorized,
        "RESOURCE_EXHAUSTED" => ErrorKind::RateLimited,
        "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" => ErrorKind::Unavailable,
        "INVALID_ARGUMENT" | "ALREADY_EXISTS" | "FAILED_PRECONDITION" => ErrorKind::InvalidRequest,
        _ => return None,
    })
}

fn http_kind(status: u16) -> ErrorKind {
    match status {
        401 | 403 => ErrorKind::Unauthorized,
        404 => ErrorKind::NotFound,
        429 => ErrorKind::RateLimited,
        400..=499 => ErrorKind::InvalidRequest,
        500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Other,
    }
}

/// What a Google error reason or status (or one of this client's own codes) means beyond
/// its kind.
pub(super) fn reason(code: &str) -> Reason {
    match code {
        "alreadyExists" | "RESOURCE_ALREADY_EXISTS" => Reason::AlreadyExists,
        "authError" | "UNAUTHENTICATED" => Reason::GrantExpired,
        "missing_default_network" => Reason::AccountSetup,
        _ => Reason::Unspecified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: u16, reason: &str, status: &str) -> Vec<u8> {
        format!(r#"{{"error":{{"code":{code},"message":"m","status":"{status}","errors":[{{"reason":"{reason}","domain":"global","message":"m"}}]}}}}"#).into_bytes()
    }

    #[test]
    fn the_reason_decides_before_the_status() {
        assert_eq!(
            classify(403, &body(403, "rateLimitExceeded", "PERMISSION_DENIED")).0,
            ErrorKind::RateLimited
        );
        assert_eq!(
            classify(403, &body(403, "forbidden", "PERMISSION_DENIED")).0,
            ErrorKind::Unauthorized
        );
        assert_eq!(
            classify(404, &body(404, "notFound", "NOT_FOUND")),
            (ErrorKind::NotFound, "notFound".into(), "m".into())
        );
        assert_eq!(
            classify(409, &body(409, "alreadyExists", "ALREADY_EXISTS")).0,
            ErrorKind::InvalidRequest
        );
        assert_eq!(
            classify(400, &body(400, "", "INVALID_ARGUMENT")).1,
            "INVALID_ARGUMENT"
        );
        assert_eq!(classify(503, b"").0, ErrorKind::Unavailable);
        assert_eq!(
            operation_kind("ZONE_RESOURCE_POOL_EXHAUSTED"),
            ErrorKind::CapacityUnavailable
        );
    }
}
