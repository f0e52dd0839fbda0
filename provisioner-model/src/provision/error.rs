//! The one error type of the provisioner's operations: variants a caller acts on, mapped to
//! gRPC codes in `levelrail-provisioner`'s `grpc/provision_status.rs`. Messages never contain a token, a secret, a
//! raw provider body or an unsanitized request value.
use crate::FieldError;
use crate::ports::StoreError;

/// What went wrong in a provisioner operation.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// A request field is invalid.
    #[error("{field}: {message}")]
    InvalidArgument {
        /// The field path (`region`, `ssh_source_cidr`, …).
        field: &'static str,
        /// What is wrong (sanitized).
        message: String,
    },
    /// No such provision.
    #[error("provision {0} not found")]
    NotFound(String),
    /// The node name is held by an enrolled node or a provision that has not failed.
    #[error("the name {0} is already used by a node or by a provision that has not failed")]
    AlreadyExists(String),
    /// Not possible in the current state (no credential stored, provision already over, …).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The provider or the credentials broker could not be reached; retrying may help. The
    /// message is one clean line.
    #[error("{0}")]
    Unavailable(String),
    /// A limit was reached (provisions in flight, database connections): refused at once
    /// rather than queued; retrying later helps.
    #[error("{0}")]
    ResourceExhausted(String),
    /// The provision store could not be reached.
    #[error("provision store unavailable")]
    StoreUnavailable(#[source] StoreError),
    /// A bug or corrupt data; the detail is logged, never returned.
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl From<FieldError> for ProvisionError {
    fn from(e: FieldError) -> Self {
        ProvisionError::InvalidArgument {
            field: e.field,
            message: e.message,
        }
    }
}

impl From<StoreError> for ProvisionError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) => ProvisionError::StoreUnavailable(e),
            StoreError::Busy => ProvisionError::ResourceExhausted(
                "the database has no free connection (too many requests in flight); retry shortly"
                    .into(),
            ),
            StoreError::Duplicate(_) | StoreError::Corrupt(_) | StoreError::UnsupportedUrl => {
                ProvisionError::Internal(anyhow::Error::new(e).context("provision store"))
            }
        }
    }
}
