//! The credentials model: the providers, credential shapes as operators submit them and
//! their strict validation, and the non-secret identity a stored credential shows. Pure:
//! no database, runtime, HTTP or gRPC crate, so the parsers build and fuzz on their own
//! (`fuzz/`).
mod identity;
mod provider;
pub mod validate;

pub use identity::{CredentialIdentity, Verification};
pub use provider::{ProviderId, UnknownProvider};
pub use validate::{CredentialInput, CredentialSecret, FieldError, ParsedCredential};
