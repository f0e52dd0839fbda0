//! A fake `NodesService`: a list of nodes and join tokens behind a mutex, recording every
//! request, with NOT_FOUND for unknown ids as the real service answers.
use std::sync::{Arc, Mutex, MutexGuard};

use levelrail_proto::nodes::v1::nodes_service_server::{NodesService, NodesServiceServer};
use levelrail_proto::nodes::v1::*;
use prost_types::Timestamp;
use tonic::{Request, Response, Status};

use crate::helpers::authorize;

/// The CA fingerprint the fake reports.
pub(crate) const CA_FINGERPRINT: &str =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
/// The secret part of every token the fake mints.
pub(crate) const TOKEN_SECRET: &str = "s3cret-join-part";
/// When every minted token expires: 2026-01-02T03:19:05Z.
pub(crate) const EXPIRES: Timestamp = Timestamp {
    seconds: 1_767_323_945,
    nanos: 0,
};

/// What the fake holds and saw.
#[derive(Debug, Default)]
pub(crate) struct NodesState {
    /// The registry, in list order.
    pub(crate) nodes: Vec<Node>,
    /// Every CreateJoinToken request.
    pub(crate) create_requests: Vec<CreateJoinTokenRequest>,
    /// Ids of tokens that can still be revoked.
    pub(crate) live_tokens: Vec<String>,
    /// Every RevokeJoinToken id.
    pub(crate) revoke_requests: Vec<String>,
    /// Every ListNodes request.
    pub(crate) list_requests: Vec<ListNodesRequest>,
    /// Every GetNode and DeleteNode id.
    pub(crate) get_requests: Vec<String>,
    pub(crate) delete_requests: Vec<String>,
    pub(crate) authorizations: Vec<String>,
    /// The orphan inventory; deleting one whose `last_error` is set fails with it.
    pub(crate) orphans: Vec<Orphan>,
    /// Every AdoptOrphan and DeleteOrphan id.
    pub(crate) orphan_requests: Vec<String>,
}

/// The service over shared state.
#[derive(Clone)]
pub(crate) struct FakeNodes(Arc<Mutex<NodesState>>);

impl FakeNodes {
    /// The tonic service for `state`.
    pub(crate) fn server(state: Arc<Mutex<NodesState>>) -> NodesServiceServer<Self> {
        NodesServiceServer::new(Self(state))
    }

    fn check<T>(&self, request: &Request<T>) -> Result<MutexGuard<'_, NodesState>, Status> {
        let mut state = self.0.lock().expect("nodes lock");
        authorize(request, &mut state.authorizations)?;
        Ok(state)
    }
}

#[tonic::async_trait]
impl NodesService for FakeNodes {
    async fn create_join_token(
        &self,
        request: Request<CreateJoinTokenRequest>,
    ) -> Result<Response<CreateJoinTokenResponse>, Status> {
        let mut state = self.check(&request)?;
        state.create_requests.push(request.into_inner());
        let token_id = format!("njt_{}", state.create_requests.len());
        state.live_tokens.push(token_id.clone());
        Ok(Response::new(CreateJoinTokenResponse {
            token: format!("LR1.{CA_FINGERPRINT}.{token_id}.{TOKEN_SECRET}"),
            token_id,
            expires_at: Some(EXPIRES),
            ca_fingerprint: CA_FINGERPRINT.into(),
        }))
    }

    async fn revoke_join_token(
        &self,
        request: Request<RevokeJoinTokenRequest>,
    ) -> Result<Response<RevokeJoinTokenResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().token_id;
        state.revoke_requests.push(id.clone());
        let before = state.live_tokens.len();
        state.live_tokens.retain(|t| *t != id);
        if state.live_tokens.len() == before {
            return Err(Status::not_found("join token not found"));
        }
        Ok(Response::new(RevokeJoinTokenResponse {}))
    }

    async fn list_nodes(
        &self,
        request: Request<ListNodesRequest>,
    ) -> Result<Response<ListNodesResponse>, Status> {
        let mut state = self.check(&request)?;
        state.list_requests.push(request.get_ref().clone());
        // Pages of two whatever the size asked, so the CLI must follow the tokens.
        let page = request.get_ref();
        let start: usize = match page.page_token.as_str() {
            "" => 0,
            token => token
                .parse()
                .map_err(|_| Status::invalid_argument("page_token: not one of this fake's"))?,
        };
        let end = (start + 2).min(state.nodes.len());
        Ok(Response::new(ListNodesResponse {
            nodes: state.nodes.get(start..end).unwrap_or_default().to_vec(),
            next_page_token: if end < state.nodes.len() {
                end.to_string()
            } else {
                String::new()
            },
        }))
    }

    async fn get_node(
        &self,
        request: Request<GetNodeRequest>,
    ) -> Result<Response<GetNodeResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.get_requests.push(id.clone());
        let node = state.nodes.iter().find(|n| n.id == id).cloned();
        match node {
            Some(node) => Ok(Response::new(GetNodeResponse { node: Some(node) })),
            None => Err(Status::not_found("node not found")),
        }
    }

    async fn delete_node(
        &self,
        request: Request<DeleteNodeRequest>,
    ) -> Result<Response<DeleteNodeResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.delete_requests.push(id.clone());
        let before = state.nodes.len();
        state.nodes.retain(|n| n.id != id);
        if state.nodes.len() == before {
            return Err(Status::not_found("node not found"));
        }
        Ok(Response::new(DeleteNodeResponse {}))
    }

    async fn list_orphans(
        &self,
        request: Request<ListOrphansRequest>,
    ) -> Result<Response<ListOrphansResponse>, Status> {
        let state = self.check(&request)?;
        Ok(Response::new(ListOrphansResponse {
            orphans: state.orphans.clone(),
        }))
    }

    async fn adopt_orphan(
        &self,
        request: Request<AdoptOrphanRequest>,
    ) -> Result<Response<AdoptOrphanResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.orphan_requests.push(id.clone());
        let orphan = state
            .orphans
            .iter_mut()
            .find(|o| o.id == id)
            .ok_or_else(|| Status::not_found("orphan not found"))?;
        orphan.state = OrphanState::Adopted.into();
        let token = format!("LR1.{CA_FINGERPRINT}.njt_adopt.{TOKEN_SECRET}");
        Ok(Response::new(AdoptOrphanResponse {
            env_file: format!(
                "APP_CONTROL_PLANE_ADDR=cp.example.com:9443\nAPP_JOIN_TOKEN={token}\nAPP_NODE_NAME={}\n",
                orphan.node_name
            ),
            orphan: Some(orphan.clone()),
            token_id: "njt_adopt".into(),
            token,
            expires_at: Some(EXPIRES),
            env_file_path: "/etc/levelrail/agent.env".into(),
            command: "levelrail-agent --env-file /etc/levelrail/agent.env".into(),
        }))
    }

    async fn delete_orphan(
        &self,
        request: Request<DeleteOrphanRequest>,
    ) -> Result<Response<DeleteOrphanResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.orphan_requests.push(id.clone());
        let orphan = state
            .orphans
            .iter_mut()
            .find(|o| o.id == id)
            .ok_or_else(|| Status::not_found("orphan not found"))?;
        let deleted = orphan.last_error.is_empty();
        if deleted {
            orphan.state = OrphanState::Deleted.into();
        }
        orphan.attempts += 1;
        Ok(Response::new(DeleteOrphanResponse {
            orphan: Some(orphan.clone()),
            deleted,
        }))
    }
}
