//! The Levelrail provisioner: the provision workflow, nodes, join tokens, orphans,
//! enrollment and the control-plane CA. The provider clients are `levelrail-clouds`.
//!
//! Layers, each importing only those below it (`tests/layering.rs` holds this):
//! - `grpc`: the operators' and the agents' services;
//! - `app`: the `Nodes`, `Provisioner` and `Orphans` operations and the saga engine
//!   (`app::workflow`), over the model's ports and the provider clients;
//! - `store`, `cloudinit`: the SQL store implementing the ports, and the user-data;
//! - `enroll`: the control-plane CA and the sealing key file;
//! - `model`: names, nodes, join tokens, orphans, the provision aggregate, the ports.
pub mod app;
pub mod cloudinit;
pub mod enroll;
pub mod grpc;
pub mod model;
pub mod store;

#[cfg(test)]
mod test_support;
