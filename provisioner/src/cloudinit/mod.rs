//! The user-data layer: `levelrail-cloudinit` (render, read back, validate), a crate of its
//! own so the renderer builds and fuzzes without the provider clients.
pub use levelrail_cloudinit::*;
