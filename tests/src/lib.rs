//! Test support shared by the workspace-level tests and the demo mode: canary secrets and
//! the fake clouds (real wire formats, inventories, state machines, fault injection).
//! The harness that starts the control plane lives with the tests (`tests/api/harness.rs`)
//! so this library does not depend on the control plane, which uses it for `--demo`.
pub mod boot;
pub mod fakes;
pub mod openapi;
pub mod secrets;
pub mod specs;
