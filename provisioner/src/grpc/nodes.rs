//! `NodesService`: the operator-facing join-token, node-registry and orphan-inventory RPCs.
use std::sync::Arc;

use levelrail_proto::nodes::v1 as pb;
use levelrail_proto::nodes::v1::nodes_service_server::{NodesService, NodesServiceServer};
use tonic::{Request, Response, Status};

use super::convert;
use super::orphan_convert;
use crate::app::{Nodes, NodesError, Orphans};
use crate::model::{JoinTokenId, NodeId, OrphanId, Role};

/// The `NodesService` implementation over a [`Nodes`] registry.
#[derive(Debug, Clone)]
pub struct NodesGrpc {
    nodes: Arc<Nodes>,
    orphans: Option<Arc<Orphans>>,
}

impl NodesGrpc {
    /// Handlers over `nodes`; the orphan RPCs answer `FAILED_PRECONDITION` until
    /// [`Self::with_orphans`] gives them an inventory.
    pub fn new(nodes: Arc<Nodes>) -> Self {
        NodesGrpc {
            nodes,
            orphans: None,
        }
    }

    /// Serves the orphan RPCs from `orphans` (the provisioner's inventory).
    pub fn with_orphans(mut self, orphans: Arc<Orphans>) -> Self {
        self.orphans = Some(orphans);
        self
    }

    fn orphans(&self) -> Result<&Orphans, NodesError> {
        self.orphans.as_deref().ok_or_else(|| {
            NodesError::FailedPrecondition(
                "this control plane does not provision servers, so it keeps no orphans".into(),
            )
        })
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
        request: Request<pb::ListNodesRequest>,
    ) -> Result<Response<pb::ListNodesResponse>, Status> {
        let request = request.into_inner();
        let now = self.nodes.now();
        let filter = convert::node_filter(&request, now).map_err(NodesError::from)?;
        let (nodes, next_page_token) = self
            .nodes
            .list_nodes_page(request.page_size, &request.page_token, &filter)
            .await?;
        let nodes = nodes.into_iter().map(|n| convert::node(n, now)).collect();
        Ok(Response::new(pb::ListNodesResponse {
            nodes,
            next_page_token,
        }))
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

    async fn list_orphans(
        &self,
        _request: Request<pb::ListOrphansRequest>,
    ) -> Result<Response<pb::ListOrphansResponse>, Status> {
        let orphans = self.orphans()?.list_orphans().await?;
        let orphans = orphans.into_iter().map(orphan_convert::orphan).collect();
        Ok(Response::new(pb::ListOrphansResponse { orphans }))
    }

    async fn adopt_orphan(
        &self,
        request: Request<pb::AdoptOrphanRequest>,
    ) -> Result<Response<pb::AdoptOrphanResponse>, Status> {
        let pb::AdoptOrphanRequest { id } = request.into_inner();
        let id = OrphanId::parse(&id).map_err(NodesError::from)?;
        let adoption = self.orphans()?.adopt_orphan(&id).await?;
        Ok(Response::new(orphan_convert::adoption(adoption)))
    }

    async fn delete_orphan(
        &self,
        request: Request<pb::DeleteOrphanRequest>,
    ) -> Result<Response<pb::DeleteOrphanResponse>, Status> {
        let pb::DeleteOrphanRequest { id } = request.into_inner();
        let id = OrphanId::parse(&id).map_err(NodesError::from)?;
        let orphan = self.orphans()?.delete_orphan(&id).await?;
        Ok(Response::new(orphan_convert::deletion(orphan)))
    }
}
