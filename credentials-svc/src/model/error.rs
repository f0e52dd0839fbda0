//! The errors of the credentials service: variants a caller acts on.
use crate::crypto::CryptoError;
use crate::model::ports::StoreError;
use crate::model::{FieldError, ProviderId};

/// What can go wrong in a credentials operation. Display texts never contain secret
/// material; `Internal` texts are logged, not returned to callers.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The input is malformed; names the field.
    #[error("{0}")]
    InvalidArgument(#[from] FieldError),
    /// The named thing (an API token) does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The operation needs a stored credential and there is none.
    #[error("no credential is stored for {0}")]
    NotConnected(ProviderId),
    /// The operation is not possible in the current state or configuration.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The provider refused a token exchange.
    #[error("{0}")]
    PermissionDenied(String),
    /// A dependency (database, provider token endpoint) is unreachable.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed.
    #[error("credential store error")]
    Store(#[from] StoreError),
    /// Decryption or key management failed (tampered row, missing key).
    #[error("credential decryption failed")]
    Crypto(#[from] CryptoError),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}
