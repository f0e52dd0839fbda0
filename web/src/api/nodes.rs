//! NodesService calls: the node list and the orphan inventory.
use levelrail_proto::nodes::v1::{
    AdoptOrphanRequest, AdoptOrphanResponse, DeleteNodeRequest, DeleteNodeResponse,
    DeleteOrphanRequest, DeleteOrphanResponse, GetNodeRequest, GetNodeResponse, ListNodesRequest,
    ListNodesResponse, ListOrphansRequest, ListOrphansResponse, Node, Orphan,
};

use super::credentials::missing;
use super::{Api, ApiError};

impl Api {
    /// One page of the nodes `request` asks for (its filters, size and page token).
    pub async fn list_nodes(
        &self,
        request: ListNodesRequest,
    ) -> Result<ListNodesResponse, ApiError> {
        self.unary("/levelrail.nodes.v1.NodesService/ListNodes", request)
            .await
    }

    /// One node.
    pub async fn get_node(&self, id: String) -> Result<Node, ApiError> {
        let path = "/levelrail.nodes.v1.NodesService/GetNode";
        let r: GetNodeResponse = self.unary(path, GetNodeRequest { id }).await?;
        r.node.ok_or_else(missing)
    }

    /// Deletes a node record; with `destroy_server`, its server at the cloud first.
    pub async fn delete_node(&self, id: String, destroy_server: bool) -> Result<(), ApiError> {
        let request = DeleteNodeRequest { id, destroy_server };
        let _: DeleteNodeResponse = self
            .unary("/levelrail.nodes.v1.NodesService/DeleteNode", request)
            .await?;
        Ok(())
    }

    /// Every orphaned server, oldest first.
    pub async fn list_orphans(&self) -> Result<Vec<Orphan>, ApiError> {
        let path = "/levelrail.nodes.v1.NodesService/ListOrphans";
        let r: ListOrphansResponse = self.unary(path, ListOrphansRequest {}).await?;
        Ok(r.orphans)
    }

    /// Adopts an orphan: the join token and the agent's env file, shown once.
    pub async fn adopt_orphan(&self, id: String) -> Result<AdoptOrphanResponse, ApiError> {
        self.unary(
            "/levelrail.nodes.v1.NodesService/AdoptOrphan",
            AdoptOrphanRequest { id },
        )
        .await
    }

    /// Deletes an orphan's server at its provider now.
    pub async fn delete_orphan(&self, id: String) -> Result<DeleteOrphanResponse, ApiError> {
        self.unary(
            "/levelrail.nodes.v1.NodesService/DeleteOrphan",
            DeleteOrphanRequest { id },
        )
        .await
    }
}
