//! ApiTokensService calls: the API tokens panel.
use levelrail_proto::auth::v1::{
    ApiTokenInfo, ApiTokenScope, CreateApiTokenRequest, CreateApiTokenResponse,
    ListApiTokensRequest, RevokeApiTokenRequest,
};

use super::{Api, ApiError};

impl Api {
    /// Every API token, revoked and expired ones too.
    pub async fn list_api_tokens(&self) -> Result<Vec<ApiTokenInfo>, ApiError> {
        let mut c = self.tokens()?;
        match c.list_api_tokens(ListApiTokensRequest {}).await {
            Ok(r) => Ok(r.into_inner().tokens),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Creates a token named `label` of `scope`, living `days` days (`None`: until
    /// revoked). The answer holds the token: show it once.
    pub async fn create_api_token(
        &self,
        label: String,
        scope: ApiTokenScope,
        days: Option<u32>,
    ) -> Result<CreateApiTokenResponse, ApiError> {
        let mut c = self.tokens()?;
        let request = CreateApiTokenRequest {
            label,
            scope: scope as i32,
            expires_in: days.map(|d| prost_types::Duration {
                seconds: i64::from(d) * 86_400,
                nanos: 0,
            }),
        };
        match c.create_api_token(request).await {
            Ok(r) => Ok(r.into_inner()),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Revokes the token `id`.
    pub async fn revoke_api_token(&self, id: String) -> Result<(), ApiError> {
        let mut c = self.tokens()?;
        match c.revoke_api_token(RevokeApiTokenRequest { id }).await {
            Ok(_) => Ok(()),
            Err(s) => Err(self.fail(s)),
        }
    }
}
