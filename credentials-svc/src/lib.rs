//! The Levelrail credentials service: the only holder of long-lived cloud secrets and of the
//! master key. Its public API is write-only; the internal broker hands short-lived access
//! grants to the provisioner.
//!
//! Layers, each importing only those below it (`tests/layering.rs` holds this):
//! - `grpc`, `startup`: the listeners' services, and opening the service from a data
//!   directory;
//! - `app`: the `Credentials` operations;
//! - `verify`: proving a credential at its provider with the provider clients;
//! - `broker`, `store`: token exchanges (STS, AAD, Google), and the SQL store;
//! - `model`: credential shapes and validation, identities, errors, the storage port;
//! - `crypto`: envelopes, keyrings and the key file.
pub mod app;
pub mod broker;
pub mod crypto;
pub mod grpc;
pub mod model;
pub mod startup;
pub mod store;
pub mod verify;
