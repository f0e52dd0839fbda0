//! The one mapping from `ProvisionError` to `tonic::Status`. Internal and store errors get
//! a fixed message; their detail is logged instead.
use tonic::{Code, Status};
use tracing::warn;

use crate::model::provision::ProvisionError;

/// The status a `ProvisionError` is answered with (a function, not `From`: both types
/// are other crates').
pub(crate) fn status(e: ProvisionError) -> Status {
    match e {
        ProvisionError::InvalidArgument { .. } => Status::invalid_argument(e.to_string()),
        ProvisionError::NotFound(_) => Status::not_found(e.to_string()),
        ProvisionError::AlreadyExists(_) => Status::already_exists(e.to_string()),
        ProvisionError::FailedPrecondition(message) => Status::failed_precondition(message),
        ProvisionError::Unavailable(message) => Status::unavailable(message),
        ProvisionError::ResourceExhausted(message) => Status::resource_exhausted(message),
        ProvisionError::StoreUnavailable(source) => {
            warn!(error = %source, cause = ?std::error::Error::source(&source), "provision store unavailable");
            Status::new(
                Code::Unavailable,
                "provision store unavailable, retry later",
            )
        }
        ProvisionError::Internal(source) => {
            warn!(
                error = format!("{source:#}"),
                "internal error in the provisioner"
            );
            Status::internal("internal error")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ports::StoreError;

    #[test]
    fn every_error_maps_to_its_grpc_code() {
        let cases: Vec<(ProvisionError, Code)> = vec![
            (
                ProvisionError::InvalidArgument {
                    field: "region",
                    message: "bad".into(),
                },
                Code::InvalidArgument,
            ),
            (ProvisionError::NotFound("npv_1".into()), Code::NotFound),
            (
                ProvisionError::AlreadyExists("web".into()),
                Code::AlreadyExists,
            ),
            (
                ProvisionError::FailedPrecondition("no credential".into()),
                Code::FailedPrecondition,
            ),
            (
                ProvisionError::Unavailable("down".into()),
                Code::Unavailable,
            ),
            (
                ProvisionError::StoreUnavailable(StoreError::Unavailable(Box::new(
                    sqlx::Error::PoolTimedOut,
                ))),
                Code::Unavailable,
            ),
            (
                ProvisionError::from(StoreError::from(levelrail_db::DbError::Unavailable(
                    sqlx::Error::PoolTimedOut,
                ))),
                Code::ResourceExhausted,
            ),
            (
                ProvisionError::ResourceExhausted("limit".into()),
                Code::ResourceExhausted,
            ),
            (
                ProvisionError::Internal(anyhow::anyhow!("row 7 is corrupt")),
                Code::Internal,
            ),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            assert_eq!(status(error).code(), code, "{text}");
        }
    }

    #[test]
    fn invalid_arguments_name_the_field_and_internal_errors_hide_detail() {
        let invalid = status(ProvisionError::InvalidArgument {
            field: "ssh_source_cidr",
            message: "x".into(),
        });
        assert_eq!(invalid.message(), "ssh_source_cidr: x");
        let internal = status(ProvisionError::Internal(anyhow::anyhow!("secret detail")));
        assert_eq!(internal.message(), "internal error");
    }
}
