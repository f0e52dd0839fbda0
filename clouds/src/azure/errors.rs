//! Classification of Azure Resource Manager errors. ARM answers `{"error": {"code",
//! "message", "details"}}` (a few resource providers omit the envelope and send the inner
//! object); the code decides the kind, the HTTP status is the fallback.
use serde::Deserialize;

use crate::{ErrorKind, Reason};

#[derive(Deserialize)]
struct Envelope {
    // The Retail Prices API spells its envelope `{"Error": {"Code", "Message"}}`.
    #[serde(alias = "Error")]
    error: Option<Body>,
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// The inner error object (also found in a failed long-running operation's status).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Body {
    #[serde(default, alias = "Code")]
    pub(super) code: String,
    #[serde(default, alias = "Message")]
    pub(super) message: String,
}

/// The `Classifier` of the ARM client: (kind, ARM code, ARM message).
pub(super) fn classify(status: u16, body: &[u8]) -> (ErrorKind, String, String) {
    let (code, message) = match serde_json::from_slice::<Envelope>(body) {
        Ok(Envelope { error: Some(e), .. }) => (e.code, e.message),
        Ok(e) => (e.code, e.message),
        Err(_) => Default::default(),
    };
    let kind = kind_of(&code).unwrap_or_else(|| kind_of_status(status));
    let code = if code.is_empty() {
        format!("http_{status}")
    } else {
        code
    };
    let message = if message.is_empty() {
        format!("Azure Resource Manager answered HTTP {status}")
    } else {
        message
    };
    (kind, code, message)
}

/// The kind of a failed operation's error code (no HTTP status to fall back on).
pub(super) fn kind_of_operation(code: &str) -> ErrorKind {
    kind_of(code).unwrap_or(ErrorKind::Other)
}

/// The kind for an ARM / Compute / Network error code.
fn kind_of(code: &str) -> Option<ErrorKind> {
    Some(match code {
        "ResourceNotFound"
        | "ResourceGroupNotFound"
        | "NotFound"
        | "ParentResourceNotFound"
        | "SubscriptionNotFound" => ErrorKind::NotFound,
        "AuthorizationFailed"
        | "AuthenticationFailed"
        | "InvalidAuthenticationToken"
        | "InvalidAuthenticationTokenTenant"
        | "ExpiredAuthenticationToken"
        | "LinkedAuthorizationFailed"
        | "missing_subscription_reader" => ErrorKind::Unauthorized,
        "TooManyRequests" | "SubscriptionRequestsThrottled" => ErrorKind::RateLimited,
        "SkuNotAvailable"
        | "QuotaExceeded"
        | "OperationNotAllowed"
        | "AllocationFailed"
        | "ZonalAllocationFailed"
        | "OverconstrainedAllocationRequest"
        | "OverconstrainedZonalAllocationRequest"
        | "PublicIPCountLimitReached" => ErrorKind::CapacityUnavailable,
        "InternalServerError"
        | "InternalExecutionError"
        | "ServerTimeout"
        | "RetryableError"
        | "GatewayTimeout"
        | "ServiceUnavailable" => ErrorKind::Unavailable,
        "InvalidParameter"
        | "InvalidRequestContent"
        | "InvalidRequestFormat"
        | "InvalidResourceName"
        | "BadRequest"
        | "Conflict"
        | "InUseSubnetCannotBeDeleted"
        | "PropertyChangeNotAllowed"
        | "name_taken"
        | "resource_group_missing" => ErrorKind::InvalidRequest,
        _ => return None,
    })
}

fn kind_of_status(status: u16) -> ErrorKind {
    match status {
        401 | 403 => ErrorKind::Unauthorized,
        404 => ErrorKind::NotFound,
        429 => ErrorKind::RateLimited,
        400..=499 => ErrorKind::InvalidRequest,
        500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Other,
    }
}

/// What an ARM error code (or one of this client's own) means beyond its kind.
pub(super) fn reason(code: &str) -> Reason {
    match code {
        "ExpiredAuthenticationToken" | "InvalidAuthenticationToken" => Reason::GrantExpired,
        "missing_subscription_reader" | "resource_group_missing" => Reason::AccountSetup,
        _ => Reason::Unspecified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_decide_and_the_status_is_the_fallback() {
        let body = |c: &str| format!(r#"{{"error":{{"code":"{c}","message":"m"}}}}"#).into_bytes();
        assert_eq!(
            classify(404, &body("ResourceGroupNotFound")).0,
            ErrorKind::NotFound
        );
        assert_eq!(
            classify(403, &body("AuthorizationFailed")).0,
            ErrorKind::Unauthorized
        );
        assert_eq!(
            classify(409, &body("SkuNotAvailable")).0,
            ErrorKind::CapacityUnavailable
        );
        assert_eq!(
            classify(409, &body("OperationNotAllowed")).0,
            ErrorKind::CapacityUnavailable
        );
        assert_eq!(
            classify(500, &body("InternalServerError")).0,
            ErrorKind::Unavailable
        );
        assert_eq!(
            classify(400, &body("SomethingNew")).0,
            ErrorKind::InvalidRequest
        );
        let (kind, code, message) = classify(502, b"<html/>");
        assert_eq!((kind, code.as_str()), (ErrorKind::Unavailable, "http_502"));
        assert!(message.contains("502"));
        let bare = br#"{"code":"ResourceNotFound","message":"gone"}"#;
        assert_eq!(
            classify(404, bare),
            (
                ErrorKind::NotFound,
                "ResourceNotFound".into(),
                "gone".into()
            )
        );
    }
}
