//! `levelrail.auth.v1.ApiTokensService`: operators' API tokens, created (the secret in the
//! one answer), listed and revoked.
use levelrail_proto::auth::v1 as apb;
use levelrail_proto::auth::v1::api_tokens_service_server::ApiTokensService;
use tonic::{Request, Response, Status};

use super::convert::timestamp;
use crate::app::Credentials;
use crate::model::ports::ApiTokenRecord;
use secrecy::ExposeSecret as _;

/// The API tokens over gRPC.
#[derive(Debug, Clone)]
pub struct ApiTokensGrpc {
    credentials: Credentials,
}

impl ApiTokensGrpc {
    /// Serves the tokens of `credentials`.
    pub fn new(credentials: Credentials) -> Self {
        Self { credentials }
    }
}

fn info(t: &ApiTokenRecord) -> apb::ApiTokenInfo {
    apb::ApiTokenInfo {
        id: t.id.clone(),
        label: t.label.clone(),
        created_at: Some(timestamp(t.created_at)),
        revoked_at: t.revoked_at.map(timestamp),
    }
}

#[tonic::async_trait]
impl ApiTokensService for ApiTokensGrpc {
    async fn create_api_token(
        &self,
        request: Request<apb::CreateApiTokenRequest>,
    ) -> Result<Response<apb::CreateApiTokenResponse>, Status> {
        let (token, record) = self
            .credentials
            .create_api_token(&request.into_inner().label)
            .await?;
        Ok(Response::new(apb::CreateApiTokenResponse {
            token: token.expose_secret().to_owned(),
            info: Some(info(&record)),
        }))
    }

    async fn list_api_tokens(
        &self,
        _request: Request<apb::ListApiTokensRequest>,
    ) -> Result<Response<apb::ListApiTokensResponse>, Status> {
        let tokens = self.credentials.list_api_tokens().await?;
        Ok(Response::new(apb::ListApiTokensResponse {
            tokens: tokens.iter().map(info).collect(),
        }))
    }

    async fn revoke_api_token(
        &self,
        request: Request<apb::RevokeApiTokenRequest>,
    ) -> Result<Response<apb::RevokeApiTokenResponse>, Status> {
        let record = self
            .credentials
            .revoke_api_token(&request.into_inner().id)
            .await?;
        Ok(Response::new(apb::RevokeApiTokenResponse {
            info: Some(info(&record)),
        }))
    }
}
