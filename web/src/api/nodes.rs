//! NodesService calls: the node list.
use levelrail_proto::nodes::v1::{ListNodesRequest, Node};

use super::{Api, ApiError};

impl Api {
    /// Every enrolled node.
    pub async fn list_nodes(&self) -> Result<Vec<Node>, ApiError> {
        let mut c = self.nodes()?;
        match c.list_nodes(ListNodesRequest {}).await {
            Ok(r) => Ok(r.into_inner().nodes),
            Err(s) => Err(self.fail(s)),
        }
    }
}
