//! ApiTokensService calls: the API tokens panel.
use levelrail_proto::auth::v1::{
    ApiTokenInfo, ApiTokenScope, CreateApiTokenRequest, CreateApiTokenResponse,
    ListApiTokensRequest, ListApiTokensResponse, RevokeApiTokenRequest, RevokeApiTokenResponse,
};

use super::{Api, ApiError};

impl Api {
    /// Every API token, revoked and expired ones too.
    pub async fn list_api_tokens(&self) -> Result<Vec<ApiTokenInfo>, ApiError> {
        let path = "/levelrail.auth.v1.ApiTokensService/ListApiTokens";
        let r: ListApiTokensResponse = self.unary(path, ListApiTokensRequest {}).await?;
        Ok(r.tokens)
    }

    /// Creates a token named `label` of `scope`, living `days` days (`None`: until
    /// revoked). The answer holds the token: show it once.
    pub async fn create_api_token(
        &self,
        label: String,
        scope: ApiTokenScope,
        days: Option<u32>,
    ) -> Result<CreateApiTokenResponse, ApiError> {
        let request = CreateApiTokenRequest {
            label,
            scope: scope as i32,
            expires_in: days.map(|d| prost_types::Duration {
                seconds: i64::from(d) * 86_400,
                nanos: 0,
            }),
        };
        self.unary(
            "/levelrail.auth.v1.ApiTokensService/CreateApiToken",
            request,
        )
        .await
    }

    /// Revokes the token `id`.
    pub async fn revoke_api_token(&self, id: String) -> Result<(), ApiError> {
        let path = "/levelrail.auth.v1.ApiTokensService/RevokeApiToken";
        let _: RevokeApiTokenResponse = self.unary(path, RevokeApiTokenRequest { id }).await?;
        Ok(())
    }
}
