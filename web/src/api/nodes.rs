//! NodesService calls: the node list and the orphan inventory.
use levelrail_proto::nodes::v1::{
    AdoptOrphanRequest, AdoptOrphanResponse, DeleteNodeRequest, DeleteOrphanRequest,
    DeleteOrphanResponse, GetNodeRequest, ListNodesRequest, ListNodesResponse, ListOrphansRequest,
    Node, Orphan,
};

use super::credentials::missing;
use super::{Api, ApiError};

impl Api {
    /// One page of the nodes `request` asks for (its filters, size and page token).
    pub async fn list_nodes(
        &self,
        request: ListNodesRequest,
    ) -> Result<ListNodesResponse, ApiError> {
        let mut c = self.nodes()?;
        match c.list_nodes(request).await {
            Ok(r) => Ok(r.into_inner()),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// One node.
    pub async fn get_node(&self, id: String) -> Result<Node, ApiError> {
        let mut c = self.nodes()?;
        match c.get_node(GetNodeRequest { id }).await {
            Ok(r) => r.into_inner().node.ok_or_else(missing),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Deletes a node record; with `destroy_server`, its server at the cloud first.
    pub async fn delete_node(&self, id: String, destroy_server: bool) -> Result<(), ApiError> {
        let mut c = self.nodes()?;
        match c
            .delete_node(DeleteNodeRequest { id, destroy_server })
            .await
        {
            Ok(_) => Ok(()),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Every orphaned server, oldest first.
    pub async fn list_orphans(&self) -> Result<Vec<Orphan>, ApiError> {
        let mut c = self.nodes()?;
        match c.list_orphans(ListOrphansRequest {}).await {
            Ok(r) => Ok(r.into_inner().orphans),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Adopts an orphan: the join token and the agent's env file, shown once.
    pub async fn adopt_orphan(&self, id: String) -> Result<AdoptOrphanResponse, ApiError> {
        let mut c = self.nodes()?;
        match c.adopt_orphan(AdoptOrphanRequest { id }).await {
            Ok(r) => Ok(r.into_inner()),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Deletes an orphan's server at its provider now.
    pub async fn delete_orphan(&self, id: String) -> Result<DeleteOrphanResponse, ApiError> {
        let mut c = self.nodes()?;
        match c.delete_orphan(DeleteOrphanRequest { id }).await {
            Ok(r) => Ok(r.into_inner()),
            Err(s) => Err(self.fail(s)),
        }
    }
}
