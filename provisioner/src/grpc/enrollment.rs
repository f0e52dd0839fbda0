//! `EnrollmentService`: the agent-facing RPCs on the agent listener. `Enroll` is
//! authenticated by a join token, `ReportProgress` by a provision's progress credential,
//! `Heartbeat` by the node's client certificate ([`super::PeerCertificates`]).
use std::sync::Arc;

use levelrail_proto::nodes::v1 as pb;
use levelrail_proto::nodes::v1::enrollment_service_server::{
    EnrollmentService, EnrollmentServiceServer,
};
use secrecy::{ExposeSecret as _, SecretString};
use tonic::{Request, Response, Status};

use super::{convert, peer};
use crate::app::{Nodes, NodesError};
use crate::model::{HeartbeatReport, InstallStep, NodeName};

/// The `EnrollmentService` implementation over a [`Nodes`] registry.
#[derive(Debug, Clone)]
pub struct EnrollmentGrpc {
    nodes: Arc<Nodes>,
}

impl EnrollmentGrpc {
    /// Handlers over `nodes`.
    pub fn new(nodes: Arc<Nodes>) -> Self {
        EnrollmentGrpc { nodes }
    }

    /// The tonic service, ready to mount on the agent (TLS) listener.
    pub fn into_server(self) -> EnrollmentServiceServer<Self> {
        EnrollmentServiceServer::new(self)
    }
}

#[tonic::async_trait]
impl EnrollmentService for EnrollmentGrpc {
    async fn enroll(
        &self,
        request: Request<pb::EnrollRequest>,
    ) -> Result<Response<pb::EnrollResponse>, Status> {
        let pb::EnrollRequest {
            join_token,
            node_name,
            addresses,
            agent_version,
            csr_pem,
        } = request.into_inner();
        // Zeroized when dropped, unlike the `String` it came in.
        let join_token = SecretString::from(join_token);
        let node_name = NodeName::parse_as(&node_name, "node_name").map_err(NodesError::from)?;
        let (node, certificate_pem) = self
            .nodes
            .enroll(
                join_token.expose_secret(),
                node_name,
                addresses,
                agent_version,
                &csr_pem,
            )
            .await?;
        Ok(Response::new(convert::enroll_response(
            &node,
            certificate_pem,
            self.nodes.ca().cert_pem(),
        )))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let identity = peer::node_identity(request.extensions())?;
        let pb::HeartbeatRequest {
            addresses,
            agent_version,
            docker_version,
        } = request.into_inner();
        let report = HeartbeatReport {
            addresses,
            agent_version,
            // proto3 strings have no absence: the agent sends "" when no engine answered.
            docker_version: Some(docker_version).filter(|v| !v.is_empty()),
        };
        let now = self.nodes.heartbeat(&identity, report).await?;
        Ok(Response::new(pb::HeartbeatResponse {
            server_time: Some(convert::timestamp(now)),
        }))
    }

    async fn report_progress(
        &self,
        request: Request<pb::ReportProgressRequest>,
    ) -> Result<Response<pb::ReportProgressResponse>, Status> {
        let pb::ReportProgressRequest {
            credential,
            step,
            error,
        } = request.into_inner();
        let credential = SecretString::from(credential);
        let step = InstallStep::parse(&step).map_err(NodesError::from)?;
        let error = Some(error.as_str()).filter(|e| !e.is_empty());
        self.nodes
            .report_progress(credential.expose_secret(), step, error)
            .await?;
        Ok(Response::new(pb::ReportProgressResponse {}))
    }
}
