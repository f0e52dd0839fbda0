//! The Levelrail credentials service: the only holder of long-lived cloud secrets and of the
//! master key. Its public API is write-only; the internal broker hands short-lived access
//! grants to the provisioner.
pub mod broker;
pub mod crypto;
pub mod domain;
pub mod grpc;
pub mod startup;
pub mod store;
pub mod verify;
