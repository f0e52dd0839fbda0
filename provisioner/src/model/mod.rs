//! The model layer: `levelrail-provisioner-model` (names, nodes, join tokens, orphans, the
//! provision aggregate, the ports), a crate of its own so its parsers build and fuzz
//! without the provider clients.
pub use levelrail_provisioner_model::*;
