//! Enrollment security: the control-plane certificate authority, and the key file that
//! seals provisions' join tokens at rest.
pub mod ca;
pub mod sealing_key;

pub use ca::{CaError, ControlPlaneCa, IssuedCert};
