//! `levelrail-sim`: the simulated clouds (real wire formats, inventories, state machines,
//! fault injection), the OpenAPI validation of their traffic, the boot harness that runs a
//! server's user-data as cloud-init would, and canary secrets. A dev-dependency of the
//! workspace tests, and a dependency of the server only through its `demo` feature
//! (`levelrail serve --demo`). The harness that starts the control plane lives with the
//! tests (`tests/tests/api/harness.rs`) so this library does not depend on the control plane.
pub mod boot;
pub mod demo;
pub mod fakes;
pub mod openapi;
pub mod secrets;
pub mod specs;
