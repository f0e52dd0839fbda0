//! Enrollment security: the control-plane certificate authority.
pub mod ca;

pub use ca::{CaError, ControlPlaneCa, IssuedCert};
