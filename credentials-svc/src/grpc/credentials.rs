//! `levelrail.credentials.v1.CredentialsService`: destructure, convert, one application call,
//! convert back.
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::credentials_service_server::CredentialsService;
use tonic::{Request, Response, Status};

use super::convert::{card_to_proto, input_from_proto, provider_from_proto, verification_to_proto};
use crate::app::Credentials;

/// The public credentials API over gRPC.
#[derive(Debug, Clone)]
pub struct CredentialsGrpc {
    credentials: Credentials,
}

impl CredentialsGrpc {
    /// Serves `credentials`.
    pub fn new(credentials: Credentials) -> Self {
        Self { credentials }
    }
}

#[tonic::async_trait]
impl CredentialsService for CredentialsGrpc {
    async fn set_credential(
        &self,
        request: Request<pb::SetCredentialRequest>,
    ) -> Result<Response<pb::SetCredentialResponse>, Status> {
        let input =
            input_from_proto(request.into_inner()).map_err(crate::model::CredentialsError::from)?;
        let card = self.credentials.set_credential(input).await?;
        Ok(Response::new(pb::SetCredentialResponse {
            provider: Some(card_to_proto(&card)),
        }))
    }

    async fn delete_credential(
        &self,
        request: Request<pb::DeleteCredentialRequest>,
    ) -> Result<Response<pb::DeleteCredentialResponse>, Status> {
        let provider = provider_from_proto(request.into_inner().provider)
            .map_err(crate::model::CredentialsError::from)?;
        let (deleted, card) = self.credentials.delete_credential(provider).await?;
        Ok(Response::new(pb::DeleteCredentialResponse {
            deleted,
            provider: Some(card_to_proto(&card)),
        }))
    }

    async fn list_providers(
        &self,
        _request: Request<pb::ListProvidersRequest>,
    ) -> Result<Response<pb::ListProvidersResponse>, Status> {
        let cards = self.credentials.list_providers().await?;
        Ok(Response::new(pb::ListProvidersResponse {
            providers: cards.iter().map(card_to_proto).collect(),
        }))
    }

    async fn verify_credential(
        &self,
        request: Request<pb::VerifyCredentialRequest>,
    ) -> Result<Response<pb::VerifyCredentialResponse>, Status> {
        let provider = provider_from_proto(request.into_inner().provider)
            .map_err(crate::model::CredentialsError::from)?;
        let (result, card) = self.credentials.verify_credential(provider).await?;
        Ok(Response::new(pb::VerifyCredentialResponse {
            result: Some(verification_to_proto(&result)),
            provider: Some(card_to_proto(&card)),
        }))
    }
}
