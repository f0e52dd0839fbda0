//! The Levelrail provisioner: provider clients, the provision workflow, nodes, join tokens,
//! enrollment and the control-plane CA.
pub mod app;
pub mod cloudinit;
pub mod enroll;
pub mod grpc;
pub mod model;
pub mod store;

pub use grpc::PeerCertificates;

#[cfg(test)]
mod test_support;
