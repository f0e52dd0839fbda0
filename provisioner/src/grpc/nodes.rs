//! `NodesService`: the operator-facing join-token and node-registry RPCs.
use std::sync::Arc;

use levelrail_proto::nodes::v1 as pb;
use levelrail_proto::nodes::v1::nodes_service_server::{NodesService, NodesServiceServer};
use tonic::{Request, Response, Status};

use super::convert;
use crate::domain::{JoinTokenId, NodeId, Nodes, NodesError, Role};

/// The `NodesService` implementation over a [`Nodes`] registry.
#[derive(Debug, Clone)]
pub struct NodesGrpc {
    nodes: Arc<Nodes>,
}

impl NodesGrpc {
    /// Handlers over `nodes`.
    pub fn new(nodes: Arc<Nodes>) -> Self {
        NodesGrpc { nodes }
    }

    /// The tonic service, ready to mount on the public (bearer-authenticated) listener.
    pub fn into_server(self) -> NodesServiceServer<Self> {
        NodesServiceServer::new(self)
    }
}

#[tonic::async_trait]
impl NodesService for NodesGrpc {
    async fn create_join_token(
        &self,
        request: Request<pb::CreateJoinTokenRequest>,
    ) -> Result<Response<pb::CreateJoinTokenResponse>, Status> {
        let (ttl, node_name, provision_id) =
            convert::create_join_token_args(request.into_inner()).map_err(NodesError::from)?;
        // Operator-minted tokens enroll general nodes; build nodes come from provisions.
        let (info, token) = self
            .nodes
            .create_join_token(ttl, node_name, provision_id, Role::General)
            .await?;
        Ok(Response::new(convert::create_join_token_response(
            info, &token,
        )))
    }

    async fn revoke_join_token(
        &self,
        request: Request<pb::RevokeJoinTokenRequest>,
    ) -> Result<Response<pb::RevokeJoinTokenResponse>, Status> {
        let id = JoinTokenId::parse(&request.into_inner().token_id).map_err(NodesError::from)?;
        self.nodes.revoke_join_token(&id).await?;
        Ok(Response::new(pb::RevokeJoinTokenResponse {}))
    }

    async fn list_nodes(
        &self,
        _request: Request<pb::ListNodesRequest>,
    ) -> Result<Response<pb::ListNodesResponse>, Status> {
        let nodes = self.nodes.list_nodes().await?;
        let now = self.nodes.now();
        let nodes = nodes.into_iter().map(|n| convert::node(n, now)).collect();
        Ok(Response::new(pb::ListNodesResponse { nodes }))
    }

    async fn get_node(
        &self,
        request: Request<pb::GetNodeRequest>,
    ) -> Result<Response<pb::GetNodeResponse>, Status> {
        let id = NodeId::parse(&request.into_inner().id).map_err(NodesError::from)?;
        let node = self.nodes.get_node(&id).await?;
        Ok(Response::new(pb::GetNodeResponse {
            node: Some(convert::node(node, self.nodes.now())),
        }))
    }

    async fn delete_node(
        &self,
        request: Request<pb::DeleteNodeRequest>,
    ) -> Result<Response<pb::DeleteNodeResponse>, Status> {
        let pb::DeleteNodeRequest { id, destroy_server } = request.into_inner();
        let id = NodeId::parse(&id).map_err(NodesError::from)?;
        self.nodes.delete_node(&id, destroy_server).await?;
        Ok(Response::new(pb::DeleteNodeResponse {}))
    }
}
