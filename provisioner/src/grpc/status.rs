//! The one mapping from `NodesError` to `tonic::Status`. Authentication failures carry a
//! machine-readable reason in the `x-levelrail-reason` metadata; internal errors get a
//! fixed message and their detail is logged instead.
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};
use tracing::warn;

use crate::app::NodesError;

/// The metadata key of an `UNAUTHENTICATED` status's reason (`expired`, `used`, `revoked`,
/// `unknown`, `wrong_name`, `fingerprint`, `client_certificate`).
pub const REASON_METADATA_KEY: &str = "x-levelrail-reason";

impl From<NodesError> for Status {
    fn from(e: NodesError) -> Self {
        match e {
            NodesError::InvalidArgument { .. } => Status::invalid_argument(e.to_string()),
            NodesError::NotFound { .. } => Status::not_found(e.to_string()),
            NodesError::AlreadyExists { .. } => Status::already_exists(e.to_string()),
            NodesError::Unauthenticated { reason } => {
                let mut status = Status::unauthenticated(reason.message());
                status.metadata_mut().insert(
                    REASON_METADATA_KEY,
                    MetadataValue::from_static(reason.as_str()),
                );
                status
            }
            NodesError::PermissionDenied(message) => Status::permission_denied(message),
            NodesError::FailedPrecondition(message) => Status::failed_precondition(message),
            NodesError::Unavailable(source) => {
                warn!(error = %source, cause = ?std::error::Error::source(&source), "node store unavailable");
                Status::new(Code::Unavailable, "node store unavailable, retry later")
            }
            NodesError::Internal(source) => {
                warn!(
                    error = format!("{source:#}"),
                    "internal error in the node registry"
                );
                Status::internal("internal error")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::AuthFailure;
    use crate::model::ports::StoreError;

    fn reason(status: &Status) -> Option<&str> {
        status
            .metadata()
            .get(REASON_METADATA_KEY)
            .and_then(|v| v.to_str().ok())
    }

    #[test]
    fn every_error_maps_to_its_grpc_code() {
        let cases: Vec<(NodesError, Code)> = vec![
            (
                NodesError::InvalidArgument {
                    field: "node_name",
                    message: "bad".into(),
                },
                Code::InvalidArgument,
            ),
            (
                NodesError::NotFound {
                    what: "node",
                    id: "node_1".into(),
                },
                Code::NotFound,
            ),
            (
                NodesError::AlreadyExists {
                    what: "node",
                    name: "web".into(),
                },
                Code::AlreadyExists,
            ),
            (
                NodesError::unauthenticated(AuthFailure::Used),
                Code::Unauthenticated,
            ),
            (
                NodesError::PermissionDenied("no".into()),
                Code::PermissionDenied,
            ),
            (
                NodesError::FailedPrecondition("not yet".into()),
                Code::FailedPrecondition,
            ),
            (
                NodesError::Unavailable(StoreError::Unavailable(Box::new(
                    sqlx::Error::PoolTimedOut,
                ))),
                Code::Unavailable,
            ),
            (
                NodesError::Internal(anyhow::anyhow!("secret detail")),
                Code::Internal,
            ),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            let status = Status::from(error);
            assert_eq!(status.code(), code, "{text}");
        }
    }

    #[test]
    fn invalid_arguments_name_the_field() {
        let status = Status::from(NodesError::InvalidArgument {
            field: "node_name",
            message: "is required".into(),
        });
        assert_eq!(status.message(), "node_name: is required");
    }

    #[test]
    fn unauthenticated_statuses_carry_the_reason_in_metadata() {
        let reasons = [
            (AuthFailure::Expired, "expired", "join token expired"),
            (AuthFailure::Used, "used", "join token already used"),
            (AuthFailure::Revoked, "revoked", "join token revoked"),
            (AuthFailure::Unknown, "unknown", "join token unknown"),
            (
                AuthFailure::WrongName,
                "wrong_name",
                "join token is bound to another node name",
            ),
            (
                AuthFailure::Fingerprint,
                "fingerprint",
                "CA fingerprint mismatch",
            ),
            (
                AuthFailure::ClientCertificate,
                "client_certificate",
                "client certificate",
            ),
        ];
        for (failure, wire, message) in reasons {
            let status = Status::from(NodesError::unauthenticated(failure));
            assert_eq!(reason(&status), Some(wire));
            assert!(status.message().contains(message), "{}", status.message());
        }
    }

    #[test]
    fn internal_errors_hide_their_detail() {
        let status = Status::from(NodesError::Internal(anyhow::anyhow!(
            "db row 17 is corrupt"
        )));
        assert_eq!(status.message(), "internal error");
        assert_eq!(reason(&status), None);
    }
}
