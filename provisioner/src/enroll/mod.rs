//! Enrollment security: the control-plane certificate authority, the key file that seals
//! provisions' join tokens at rest, and both shared by replicas through their database.
pub mod ca;
pub mod sealing_key;
pub mod shared;

pub use ca::{CaError, ControlPlaneCa, IssuedCert};
