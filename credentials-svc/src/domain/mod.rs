//! The credentials domain: providers, credential shapes and their validation, identities,
//! and the `Credentials` state struct the gRPC layer calls.
mod identity;
mod provider;

pub use identity::{CredentialIdentity, Verification};
pub use provider::{ProviderKind, UnknownProvider};
