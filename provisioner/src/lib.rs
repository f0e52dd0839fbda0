//! The Levelrail provisioner: provider clients, the provision workflow, nodes, join tokens,
//! enrollment and the control-plane CA.
pub mod enroll;
pub mod providers;
