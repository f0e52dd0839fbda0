//! `levelrail`: the all-in-one control plane. Wiring only: both services, the listeners,
//! the web bundle and (with `--demo`, in a build with the default `demo` feature) the
//! simulated clouds of `levelrail-sim`.
pub mod agent;
pub mod agent_binaries;
pub mod audit;
pub mod bridge;
pub mod config;
pub mod credentials_server;
#[cfg(feature = "demo")]
pub mod demo;
pub mod listener;
pub mod per_ip;
pub mod pki;
pub mod providers;
pub mod provisioner_server;
pub mod provisioning;
pub mod rest;
pub mod startup;
pub mod telemetry;
pub mod tls;
mod token_bound;

pub use startup::App;

/// Every binary that hosts the control plane (the three commands, and the tests and
/// benchmarks that start it in-process) allocates with mimalloc. A provision allocates
/// a great deal on many threads at once (HTTP/2 frames, rows, JSON), and glibc's malloc
/// spent about a sixth of Provision's time in its arenas and consolidation; with
/// mimalloc the same load ran about a quarter faster (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
