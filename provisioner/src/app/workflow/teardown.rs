//! `ServerTeardown` for `DeleteNode { destroy_server: true }`: deletes the server of the
//! node's provision, and its dedicated resources, through the provider.
use std::sync::Arc;

use async_trait::async_trait;
use tracing::info;

use super::failure::describe;
use super::undo::delete_provision_resources;
use crate::app::{NodesError, ServerTeardown};
use crate::model::ports::ProvisionStore;
use crate::model::provision::ProvisionId;
use levelrail_clouds::Ownership;
use levelrail_clouds::registry::ProviderRegistry;

/// Destroys provisioned servers on behalf of the node registry.
#[derive(Debug)]
pub struct ProvisionTeardown {
    store: Arc<dyn ProvisionStore>,
    registry: Arc<ProviderRegistry>,
    control_plane_id: String,
}

impl ProvisionTeardown {
    /// A teardown over the provision store and the provider registry of this control plane
    /// (`control_plane_id` as in `ProvisionerConfig`, so the ownership labels match).
    pub fn new(
        store: Arc<dyn ProvisionStore>,
        registry: Arc<ProviderRegistry>,
        control_plane_id: String,
    ) -> Self {
        ProvisionTeardown {
            store,
            registry,
            control_plane_id,
        }
    }
}

#[async_trait]
impl ServerTeardown for ProvisionTeardown {
    async fn destroy_server(&self, provision_id: &str) -> Result<(), NodesError> {
        let id = ProvisionId::parse_as(provision_id, "provision_id")?;
        let record = self.store.get_provision(&id).await?.ok_or_else(|| {
            NodesError::FailedPrecondition(format!(
                "provision {id} is unknown to this control plane; its server was not destroyed"
            ))
        })?;
        let purpose = format!("destroy the server of {id}");
        let (client, _) = self
            .registry
            .client(record.provider, &purpose)
            .await
            .map_err(|e| {
                NodesError::FailedPrecondition(format!("cannot reach {}: {e}", record.provider))
            })?;
        let ownership = Ownership {
            control_plane: self.control_plane_id.clone(),
            provision_id: id.to_string(),
            node_name: record.name.to_string(),
        };
        delete_provision_resources(
            client.as_ref(),
            record.provider_server_id.as_deref(),
            &ownership,
        )
        .await
        .map_err(|e| {
            NodesError::FailedPrecondition(format!(
                "could not delete the server: {}",
                describe(&e, record.region_in_use())
            ))
        })?;
        info!(provision = %id, "server destroyed for a node deletion");
        Ok(())
    }
}
