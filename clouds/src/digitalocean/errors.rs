//! DigitalOcean error answers → `ErrorKind`. DigitalOcean answers `{"id": "not_found",
//! "message": "…", "request_id": "…"}` on most endpoints and `{"error": "…",
//! "root_causes": […]}` on a few; the `id` (or the HTTP status) decides the kind, and a 422
//! whose message says the region or size cannot take the droplet is a capacity problem the
//! caller can act on by choosing another region or size.
use super::wire::ErrorBody;
use crate::ErrorKind;

/// The `Classifier` of the DigitalOcean client.
pub(super) fn classify(status: u16, body: &[u8]) -> (ErrorKind, String, String) {
    let parsed: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
    let code = parsed
        .id
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| default_code(status).to_owned());
    let message = parsed
        .message
        .clone()
        .or_else(|| parsed.error.clone())
        .or_else(|| parsed.messages.as_ref().map(|m| m.join("; ")))
        .unwrap_or_default();
    (kind(status, &code, &message), code, message)
}

fn kind(status: u16, code: &str, message: &str) -> ErrorKind {
    let code = code.to_ascii_lowercase();
    match (status, code.as_str()) {
        (_, "not_found") | (404, _) => ErrorKind::NotFound,
        (_, "unauthorized" | "forbidden") | (401 | 403, _) => ErrorKind::Unauthorized,
        (_, "too_many_requests") | (429, _) => ErrorKind::RateLimited,
        (422, _) if is_capacity(message) => ErrorKind::CapacityUnavailable,
        (500..=599, _) => ErrorKind::Unavailable,
        (400..=499, _) => ErrorKind::InvalidRequest,
        _ => ErrorKind::Other,
    }
}

/// Messages DigitalOcean uses when a region or size cannot take a new droplet, or the
/// account's droplet limit is reached ("Region is not available", "Size is not available in
/// this region.", "… will exceed your droplet limit").
fn is_capacity(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let unavailable = m.contains("unavailable") || m.contains("not available");
    ((m.contains("region") || m.contains("size")) && unavailable)
        || m.contains("droplet limit")
        || m.contains("capacity")
}

fn default_code(status: u16) -> &'static str {
    match status {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        422 => "unprocessable_entity",
        429 => "too_many_requests",
        500..=599 => "server_error",
        _ => "unexpected_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(id: &str, message: &str) -> Vec<u8> {
        serde_json::json!({"id": id, "message": message, "request_id": "r-1"})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn error_ids_map_to_the_kinds_callers_act_on() {
        let cases = [
            (
                404,
                "not_found",
                "The resource you were accessing could not be found.",
                ErrorKind::NotFound,
            ),
            (
                401,
                "unauthorized",
                "Unable to authenticate you.",
                ErrorKind::Unauthorized,
            ),
            (
                403,
                "forbidden",
                "You are not authorized to perform this operation",
                ErrorKind::Unauthorized,
            ),
            (
                429,
                "too_many_requests",
                "API rate limit exceeded.",
                ErrorKind::RateLimited,
            ),
            (
                422,
                "unprocessable_entity",
                "Region is not available",
                ErrorKind::CapacityUnavailable,
            ),
            (
                422,
                "unprocessable_entity",
                "Size is not available in this region.",
                ErrorKind::CapacityUnavailable,
            ),
            (
                422,
                "unprocessable_entity",
                "creating this droplet will exceed your droplet limit",
                ErrorKind::CapacityUnavailable,
            ),
            (
                422,
                "unprocessable_entity",
                "Name is invalid",
                ErrorKind::InvalidRequest,
            ),
            (
                400,
                "bad_request",
                "error parsing request body",
                ErrorKind::InvalidRequest,
            ),
            (
                500,
                "server_error",
                "Unexpected server-side error",
                ErrorKind::Unavailable,
            ),
            (
                503,
                "service_unavailable",
                "try again",
                ErrorKind::Unavailable,
            ),
        ];
        for (status, id, message, want) in cases {
            let (kind, code, msg) = classify(status, &body(id, message));
            assert_eq!(
                (kind, code.as_str(), msg.as_str()),
                (want, id, message),
                "{status} {id}"
            );
        }
    }

    #[test]
    fn the_root_causes_shape_and_empty_bodies_are_classified_by_status() {
        let tags = br#"{"error":"tag-name \"a b\" contains invalid characters","messages":null,"root_causes":["x"]}"#;
        let (kind, code, msg) = classify(400, tags);
        assert_eq!(
            (kind, code.as_str()),
            (ErrorKind::InvalidRequest, "bad_request")
        );
        assert!(msg.contains("invalid characters"));
        assert_eq!(
            classify(502, b"<html>bad gateway</html>").0,
            ErrorKind::Unavailable
        );
        assert_eq!(classify(404, b"").1, "not_found");
        assert_eq!(classify(302, b"").0, ErrorKind::Other);
    }
}
