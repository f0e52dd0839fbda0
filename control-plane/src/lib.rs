//! `levelrail`: the all-in-one control plane. Wiring only: both services, the listeners,
//! the web bundle and (with `--demo`) the simulated clouds.
pub mod agent;
pub mod agent_binaries;
pub mod bridge;
pub mod config;
pub mod demo;
pub mod listener;
pub mod providers;
pub mod provisioning;
pub mod startup;
pub mod telemetry;
pub mod tls;

pub use startup::App;
