//! The hook through which `DeleteNode { destroy_server }` reaches the cloud: the provision
//! workflow implements it (it owns the provider clients); the node registry only calls it.
use std::fmt::Debug;

use async_trait::async_trait;

use super::error::NodesError;

/// Destroys the server, and the dedicated resources (firewall, SSH key, …), that a
/// provision created. Must be idempotent: a server already gone is success.
#[async_trait]
pub trait ServerTeardown: Send + Sync + Debug {
    /// Destroys the server of `provision_id`; returns once the provider accepted it.
    async fn destroy_server(&self, provision_id: &str) -> Result<(), NodesError>;
}
