//! NodesService calls: the node list and the orphan inventory.
use levelrail_proto::nodes::v1::{
    AdoptOrphanRequest, AdoptOrphanResponse, DeleteOrphanRequest, DeleteOrphanResponse,
    ListNodesRequest, ListOrphansRequest, Node, Orphan,
};

use super::{Api, ApiError};

impl Api {
    /// Every enrolled node (page after page).
    pub async fn list_nodes(&self) -> Result<Vec<Node>, ApiError> {
        let mut c = self.nodes()?;
        let mut all = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = ListNodesRequest {
                page_size: 1_000,
                page_token,
            };
            let page = match c.list_nodes(request).await {
                Ok(r) => r.into_inner(),
                Err(s) => return Err(self.fail(s)),
            };
            all.extend(page.nodes);
            if page.next_page_token.is_empty() {
                return Ok(all);
            }
            page_token = page.next_page_token;
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
