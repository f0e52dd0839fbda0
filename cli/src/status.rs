//! Maps a `tonic::Status` from the control plane to the CLI's one-line error. INVALID_ARGUMENT
//! names the offending field: from a `google.rpc.BadRequest` detail when the server sends one,
//! otherwise from a `field.path: message` status message.
use prost::Message as _;
use tonic::{Code, Status};

use crate::error::{CliError, root_cause};

/// The error for a failed RPC against the control plane at `api_url`.
pub(crate) fn from_status(status: &Status, api_url: &str) -> CliError {
    match status.code() {
        Code::Unauthenticated => CliError::failed(format!(
            "the API token was rejected (UNAUTHENTICATED): {}",
            status.message()
        )),
        // The input was wrong: the same exit code as a local input error.
        Code::InvalidArgument => CliError::usage(invalid_argument(status)),
        Code::Unavailable => CliError::unreachable(api_url, &unavailable_reason(status)),
        code => CliError::failed(format!("{}: {}", code_name(code), status.message())),
    }
}

fn unavailable_reason(status: &Status) -> String {
    if let Some(source) = std::error::Error::source(status) {
        return root_cause(source);
    }
    match status.message() {
        "" => "the service is unavailable".to_owned(),
        message => message.to_owned(),
    }
}

fn invalid_argument(status: &Status) -> String {
    if let Some((field, description)) = bad_request_field(status) {
        let description = if description.is_empty() {
            status.message()
        } else {
            description.as_str()
        };
        return format!("invalid {field}: {description}");
    }
    match split_field(status.message()) {
        Some((field, message)) => format!("invalid {field}: {message}"),
        None => format!("invalid request: {}", status.message()),
    }
}

/// `aws.secret_access_key: must not be empty` → (`aws.secret_access_key`, `must not be …`).
fn split_field(message: &str) -> Option<(&str, &str)> {
    let (field, rest) = message.split_once(": ")?;
    let is_path = !field.is_empty()
        && field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '-'));
    is_path.then_some((field, rest))
}

/// `google.rpc.Status`, as carried in `grpc-status-details-bin`.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

/// `google.rpc.BadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct BadRequest {
    #[prost(message, repeated, tag = "1")]
    field_violations: Vec<FieldViolation>,
}

/// `google.rpc.BadRequest.FieldViolation`.
#[derive(Clone, PartialEq, prost::Message)]
struct FieldViolation {
    #[prost(string, tag = "1")]
    field: String,
    #[prost(string, tag = "2")]
    description: String,
}

const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

fn bad_request_field(status: &Status) -> Option<(String, String)> {
    if status.details().is_empty() {
        return None;
    }
    let rpc = RpcStatus::decode(status.details()).ok()?;
    rpc.details
        .iter()
        .filter(|any| any.type_url == BAD_REQUEST_TYPE)
        .filter_map(|any| BadRequest::decode(any.value.as_slice()).ok())
        .flat_map(|bad| bad.field_violations)
        .find(|violation| !violation.field.is_empty())
        .map(|violation| (violation.field, violation.description))
}

/// The canonical gRPC name of a status code, as operators see it in docs and server logs.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:7443";

    #[test]
    fn unauthenticated_says_the_token_was_rejected() {
        let err = from_status(&Status::unauthenticated("bad token"), URL);
        assert_eq!(
            err.to_string(),
            "the API token was rejected (UNAUTHENTICATED): bad token"
        );
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn invalid_argument_names_the_field_from_the_message() {
        let status = Status::invalid_argument("aws.role_arn: must be an IAM role ARN");
        let err = from_status(&status, URL);
        assert_eq!(
            err.to_string(),
            "invalid aws.role_arn: must be an IAM role ARN"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn invalid_argument_prefers_a_bad_request_detail() {
        let bad = BadRequest {
            field_violations: vec![FieldViolation {
                field: "gcp.service_account_json.token_uri".into(),
                description: "must be https".into(),
            }],
        };
        let details = RpcStatus {
            code: Code::InvalidArgument as i32,
            message: "bad".into(),
            details: vec![prost_types::Any {
                type_url: BAD_REQUEST_TYPE.into(),
                value: bad.encode_to_vec(),
            }],
        };
        let status = Status::with_details(
            Code::InvalidArgument,
            "the credential is malformed",
            details.encode_to_vec().into(),
        );
        assert_eq!(
            from_status(&status, URL).to_string(),
            "invalid gcp.service_account_json.token_uri: must be https"
        );
    }

    #[test]
    fn invalid_argument_without_a_field_is_an_invalid_request() {
        let status = Status::invalid_argument("the credential does not match the provider");
        assert_eq!(
            from_status(&status, URL).to_string(),
            "invalid request: the credential does not match the provider"
        );
    }

    #[test]
    fn unavailable_says_the_control_plane_cannot_be_reached() {
        let err = from_status(&Status::unavailable("connection reset"), URL);
        assert_eq!(
            err.to_string(),
            "cannot reach the control plane at http://127.0.0.1:7443: connection reset"
        );
    }

    #[test]
    fn other_codes_show_the_canonical_code_name() {
        let status = Status::failed_precondition("no credential is stored");
        assert_eq!(
            from_status(&status, URL).to_string(),
            "FAILED_PRECONDITION: no credential is stored"
        );
    }
}
