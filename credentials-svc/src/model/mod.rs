//! The credentials model: providers, credential shapes and their validation, identities
//! and verifications (all from `levelrail-credentials-model`, which builds alone), the
//! errors callers act on, and the storage port. Pure: no database, runtime, HTTP or gRPC
//! crate, and no import of a layer above it.
mod error;
pub mod ports;

pub use error::CredentialsError;
pub use levelrail_credentials_model::validate;
pub use levelrail_credentials_model::{
    CredentialIdentity, CredentialInput, CredentialSecret, FieldError, ParsedCredential,
    ProviderId, UnknownProvider, Verification,
};
