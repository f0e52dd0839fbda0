//! The credentials model: providers, credential shapes and their validation, identities
//! and verifications, the errors callers act on, and the storage port. Pure: no database,
//! runtime, HTTP or gRPC crate, and no import of a layer above it.
mod error;
mod identity;
pub mod ports;
mod provider;
pub mod validate;

pub use error::CredentialsError;
pub use identity::{CredentialIdentity, Verification};
pub use provider::{ProviderId, UnknownProvider};
pub use validate::{CredentialInput, CredentialSecret, FieldError, ParsedCredential};
