//! `levelrail.credentials.internal.v1.CredentialBroker`. Never mounted on the public
//! listener or behind gRPC-web.
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::credential_broker_server::CredentialBroker;
use tonic::{Request, Response, Status};

use super::convert::{grant_to_proto, provider_from_proto};
use crate::app::Credentials;
use crate::model::CredentialsError;

/// The internal broker over gRPC.
#[derive(Debug, Clone)]
pub struct BrokerService {
    credentials: Credentials,
}

impl BrokerService {
    /// Serves grants from `credentials`.
    pub fn new(credentials: Credentials) -> Self {
        Self { credentials }
    }
}

#[tonic::async_trait]
impl CredentialBroker for BrokerService {
    async fn issue_access(
        &self,
        request: Request<bpb::IssueAccessRequest>,
    ) -> Result<Response<bpb::IssueAccessResponse>, Status> {
        let req = request.into_inner();
        let provider = provider_from_proto(req.provider).map_err(CredentialsError::from)?;
        let grant = self
            .credentials
            .issue_access(provider, &req.purpose)
            .await?;
        Ok(Response::new(bpb::IssueAccessResponse {
            grant: Some(grant_to_proto(&grant)),
        }))
    }
}
