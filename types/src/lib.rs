//! Types every layer shares and that compile for wasm32 too (no I/O, no async): the one
//! provider identifier, used by the credentials service, the provisioner, the provider
//! clients and the server's wiring alike, so a provider is named the same way everywhere
//! and no layer maps one provider enum onto another.
mod provider;

pub use provider::{ProviderId, UnknownProvider};
