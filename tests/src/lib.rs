//! Shared helpers of the workspace-level tests: spawning the real control plane (in-process
//! through `App::build`, or as the `levelrail` binary), authenticated clients, locating the
//! built binaries, canary secrets. Fake clouds live here too as they land.
pub mod harness;
pub mod secrets;
