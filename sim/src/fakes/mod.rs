//! In-process fake clouds: each speaks its provider's real wire format, checks bearer
//! authentication, keeps an inventory, moves servers through the provider's real state
//! names over time, and injects faults at any call. Used by tests and by demo mode.
pub mod aws;
pub mod azure;
pub mod demo;
pub mod digitalocean;
pub mod edge;
pub mod faults;
mod fingerprint;
pub mod gcp;
pub mod hetzner;
pub mod tls;

pub use faults::{Fault, FaultPlan};

use std::sync::Arc;

/// What a simulated boot receives: the server and the user-data it was created with.
#[derive(Clone)]
pub struct BootEvent {
    /// Provider server id.
    pub server_id: String,
    /// Server name.
    pub name: String,
    /// The user-data document, as sent.
    pub user_data: String,
    /// The public IPv4 address the fake assigned.
    pub ipv4: String,
}

impl std::fmt::Debug for BootEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootEvent")
            .field("server_id", &self.server_id)
            .field("name", &self.name)
            .field(
                "user_data",
                &format_args!("<{} bytes>", self.user_data.len()),
            )
            .field("ipv4", &self.ipv4)
            .finish()
    }
}

/// Called when a fake server reaches its running state.
pub type BootHook = Arc<dyn Fn(BootEvent) + Send + Sync>;
