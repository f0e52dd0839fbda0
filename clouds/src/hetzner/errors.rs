//! Classification of Hetzner Cloud errors. Every error answer carries
//! `{"error": {"code", "message", "details"}}`; the code decides the kind, the HTTP status
//! is the fallback when the body is not Hetzner's (a proxy's 502 page, an empty body).
use serde::Deserialize;

use crate::{ErrorKind, Reason};

#[derive(Deserialize)]
struct Envelope {
    error: Option<Body>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// The `Classifier` of the Hetzner client: (kind, Hetzner code, Hetzner message).
pub(super) fn classify(status: u16, body: &[u8]) -> (ErrorKind, String, String) {
    let (code, message) = serde_json::from_slice::<Envelope>(body)
        .ok()
        .and_then(|e| e.error)
        .map(|e| (e.code, e.message))
        .unwrap_or_default();
    let kind = kind_of(&code).unwrap_or_else(|| kind_of_status(status));
    let code = if code.is_empty() {
        format!("http_{status}")
    } else {
        code
    };
    let message = if message.is_empty() {
        format!("the Hetzner API answered HTTP {status}")
    } else {
        message
    };
    (kind, code, message)
}

/// The kind for a documented Hetzner error code (docs.hetzner.cloud, "Errors").
fn kind_of(code: &str) -> Option<ErrorKind> {
    Some(match code {
        "not_found" => ErrorKind::NotFound,
        // `token_readonly` (401): the token may only send GET requests.
        "unauthorized" | "forbidden" | "token_readonly" => ErrorKind::Unauthorized,
        "rate_limit_exceeded" => ErrorKind::RateLimited,
        "resource_unavailable"
        | "placement_error"
        | "server_limit_exceeded"
        | "resource_limit_exceeded" => ErrorKind::CapacityUnavailable,
        "invalid_input"
        | "json_error"
        | "uniqueness_error"
        | "protected"
        | "resource_in_use"
        | "unsupported_error"
        | "method_not_allowed"
        | "deprecated_api_endpoint" => ErrorKind::InvalidRequest,
        c if c.starts_with("primary_ip_") => ErrorKind::InvalidRequest,
        // `conflict` ("please retry") and `locked` (an action is running) pass by themselves.
        "service_error" | "server_error" | "maintenance" | "timeout" | "unavailable"
        | "conflict" | "locked" => ErrorKind::Unavailable,
        _ => return None,
    })
}

fn kind_of_status(status: u16) -> ErrorKind {
    match status {
        401 | 403 => ErrorKind::Unauthorized,
        404 => ErrorKind::NotFound,
        412 => ErrorKind::CapacityUnavailable,
        429 => ErrorKind::RateLimited,
        400..=499 => ErrorKind::InvalidRequest,
        500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Other,
    }
}

/// What a Hetzner error code means beyond its kind.
pub(super) fn reason(code: &str) -> Reason {
    match code {
        "uniqueness_error" => Reason::AlreadyExists,
        "invalid_input" => Reason::InvalidInput,
        "resource_in_use" | "conflict" | "locked" => Reason::InUse,
        _ => Reason::Unspecified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: &str) -> Vec<u8> {
        format!(r#"{{"error":{{"code":"{code}","message":"m {code}","details":{{}}}}}}"#)
            .into_bytes()
    }

    #[test]
    fn documented_codes_map_to_the_kind_a_caller_acts_on() {
        let cases = [
            (404, "not_found", ErrorKind::NotFound),
            (401, "unauthorized", ErrorKind::Unauthorized),
            (403, "forbidden", ErrorKind::Unauthorized),
            (401, "token_readonly", ErrorKind::Unauthorized),
            (429, "rate_limit_exceeded", ErrorKind::RateLimited),
            (412, "resource_unavailable", ErrorKind::CapacityUnavailable),
            (412, "placement_error", ErrorKind::CapacityUnavailable),
            (
                403,
                "resource_limit_exceeded",
                ErrorKind::CapacityUnavailable,
            ),
            (403, "server_limit_exceeded", ErrorKind::CapacityUnavailable),
            (422, "invalid_input", ErrorKind::InvalidRequest),
            (409, "uniqueness_error", ErrorKind::InvalidRequest),
            (422, "resource_in_use", ErrorKind::InvalidRequest),
            (422, "service_error", ErrorKind::Unavailable),
            (403, "maintenance", ErrorKind::Unavailable),
            (504, "timeout", ErrorKind::Unavailable),
            (500, "server_error", ErrorKind::Unavailable),
        ];
        for (status, code, kind) in cases {
            let (k, c, m) = classify(status, &body(code));
            assert_eq!(
                (k, c.as_str(), m),
                (kind, code, format!("m {code}")),
                "{code}"
            );
        }
    }

    #[test]
    fn a_body_that_is_not_hetzners_falls_back_to_the_status() {
        assert_eq!(
            classify(502, b"<html>bad gateway</html>").0,
            ErrorKind::Unavailable
        );
        assert_eq!(classify(404, b"").0, ErrorKind::NotFound);
        assert_eq!(classify(418, b"{}").0, ErrorKind::InvalidRequest);
        let (_, code, message) = classify(503, b"");
        assert_eq!(code, "http_503");
        assert!(message.contains("503"));
        assert_eq!(
            classify(409, &body("something_new")).0,
            ErrorKind::InvalidRequest
        );
    }
}
