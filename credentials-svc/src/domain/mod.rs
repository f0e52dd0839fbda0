//! The credentials domain: providers, credential shapes and their validation, identities,
//! and the `Credentials` state struct the gRPC layer calls.
mod identity;
mod provider;
pub mod validate;

pub use identity::{CredentialIdentity, Verification};
pub use provider::{ProviderId, UnknownProvider};
pub use validate::{CredentialInput, CredentialSecret, FieldError, ParsedCredential};

pub mod api_token;
pub mod credentials;
mod error;
pub mod keys;

pub use credentials::Credentials;
pub use error::CredentialsError;
