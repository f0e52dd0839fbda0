//! The one error type of the node registry's operations: variants a caller acts on, mapped
//! to gRPC codes in `grpc/status.rs`. Messages never contain a token, a secret or an
//! unsanitized request value.
use crate::model::RedeemError;
use crate::model::ports::StoreError;

use crate::model::FieldError;

/// Why a caller is not authenticated. The wire names (`as_str`) go to the agent, which
/// prints a one-line message for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// The join token expired.
    Expired,
    /// The join token was already used.
    Used,
    /// The join token was revoked.
    Revoked,
    /// No such join token, or a wrong secret.
    Unknown,
    /// The join token is bound to another node name.
    WrongName,
    /// The join token names another control plane's CA.
    Fingerprint,
    /// No usable client certificate was presented.
    ClientCertificate,
    /// The progress credential is unknown, malformed, or a join token (which only enrolls).
    ProgressUnknown,
    /// The progress credential's provision is `ready` or finished: it no longer reports.
    ProgressClosed,
}

impl AuthFailure {
    /// The machine-readable reason (`x-levelrail-reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthFailure::Expired => "expired",
            AuthFailure::Used => "used",
            AuthFailure::Revoked => "revoked",
            AuthFailure::Unknown => "unknown",
            AuthFailure::WrongName => "wrong_name",
            AuthFailure::Fingerprint => "fingerprint",
            AuthFailure::ClientCertificate => "client_certificate",
            AuthFailure::ProgressUnknown => "progress_unknown",
            AuthFailure::ProgressClosed => "progress_closed",
        }
    }

    /// A one-line message for a human.
    pub fn message(self) -> &'static str {
        match self {
            AuthFailure::Expired => "join token expired",
            AuthFailure::Used => "join token already used",
            AuthFailure::Revoked => "join token revoked",
            AuthFailure::Unknown => "join token unknown",
            AuthFailure::WrongName => "join token is bound to another node name",
            AuthFailure::Fingerprint => {
                "join token was issued by another control plane (CA fingerprint mismatch)"
            }
            AuthFailure::ClientCertificate => "a valid node client certificate is required",
            AuthFailure::ProgressUnknown => {
                "progress credential unknown (a join token is only valid for Enroll)"
            }
            AuthFailure::ProgressClosed => {
                "progress credential no longer valid: the provision is ready or finished"
            }
        }
    }
}

/// What went wrong in a node registry operation.
#[derive(Debug, thiserror::Error)]
pub enum NodesError {
    /// A request field is invalid.
    #[error("{field}: {message}")]
    InvalidArgument {
        /// The field path.
        field: &'static str,
        /// What is wrong (sanitized).
        message: String,
    },
    /// The resource does not exist.
    #[error("{what} {id} not found")]
    NotFound {
        /// The kind of resource (`node`, `join token`).
        what: &'static str,
        /// Its (validated) id.
        id: String,
    },
    /// The resource exists already.
    #[error("{what} {name} already exists")]
    AlreadyExists {
        /// The kind of resource.
        what: &'static str,
        /// Its (validated) name.
        name: String,
    },
    /// The caller did not prove who it is.
    #[error("{}", reason.message())]
    Unauthenticated {
        /// Why.
        reason: AuthFailure,
    },
    /// The caller is known but may not do this.
    #[error("{0}")]
    PermissionDenied(String),
    /// The system is not in a state that allows this.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The store could not be reached; retrying may help.
    #[error("node store unavailable")]
    Unavailable(#[source] StoreError),
    /// A bug or corrupt data; the detail is logged, never returned.
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl NodesError {
    /// An `Unauthenticated` error.
    pub fn unauthenticated(reason: AuthFailure) -> Self {
        NodesError::Unauthenticated { reason }
    }
}

impl From<FieldError> for NodesError {
    fn from(e: FieldError) -> Self {
        NodesError::InvalidArgument {
            field: e.field,
            message: e.message,
        }
    }
}

impl From<StoreError> for NodesError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) | StoreError::Busy => NodesError::Unavailable(e),
            StoreError::Duplicate(_) | StoreError::Corrupt(_) | StoreError::UnsupportedUrl => {
                NodesError::Internal(anyhow::Error::new(e).context("node store"))
            }
        }
    }
}

/// The failure of a redemption as the caller sees it. `NameTaken` needs the name, so it is
/// converted by the caller.
pub(crate) fn redeem_failure(e: RedeemError, name: &str) -> NodesError {
    match e {
        RedeemError::Unknown => NodesError::unauthenticated(AuthFailure::Unknown),
        RedeemError::Expired => NodesError::unauthenticated(AuthFailure::Expired),
        RedeemError::Used => NodesError::unauthenticated(AuthFailure::Used),
        RedeemError::Revoked => NodesError::unauthenticated(AuthFailure::Revoked),
        RedeemError::WrongName => NodesError::unauthenticated(AuthFailure::WrongName),
        RedeemError::NameTaken => NodesError::AlreadyExists {
            what: "node",
            name: name.to_owned(),
        },
        RedeemError::Store(e) => e.into(),
    }
}
