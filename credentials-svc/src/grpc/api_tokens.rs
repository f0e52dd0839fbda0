//! `levelrail.auth.v1.ApiTokensService`: operators' API tokens, created (the secret in the
//! one answer), listed and revoked.
use levelrail_proto::auth::v1 as apb;
use levelrail_proto::auth::v1::api_tokens_service_server::ApiTokensService;
use tonic::{Request, Response, Status};

use super::convert::timestamp;
use crate::app::Credentials;
use crate::app::api_token::TokenEntry;
use crate::model::ports::ApiTokenRecord;
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_types::ApiScope;
use secrecy::ExposeSecret as _;
use time::OffsetDateTime;

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
        scope: apb::ApiTokenScope::from(t.scope) as i32,
        expires_at: t.expires_at.map(timestamp),
    }
}

/// The scope the wire's `scope` names: `None` when unset, an error naming the field for a
/// number no scope has.
fn scope_from_proto(scope: i32) -> Result<Option<ApiScope>, Status> {
    apb::ApiTokenScope::try_from(scope)
        .map(apb::ApiTokenScope::scope)
        .map_err(|_| {
            Status::invalid_argument(format!(
                "scope: unknown value {scope}: use READ, PROVISION, CREDENTIALS_ADMIN or ADMIN"
            ))
        })
}

/// What a provisioner replica is told of a live token (never its secret).
pub(crate) fn digest_to_proto(id: String, entry: &TokenEntry) -> bpb::ApiTokenDigest {
    bpb::ApiTokenDigest {
        id,
        secret_sha256: entry.secret_sha256.to_vec(),
        scope: apb::ApiTokenScope::from(entry.scope) as i32,
        expires_at: entry.expires_at.map(timestamp),
    }
}

/// What a provisioner replica learns of a live token; `None` for a digest it cannot use (a
/// hash of the wrong length, no scope it knows): that token is refused there, never given
/// more than it had.
pub fn digest_from_proto(d: bpb::ApiTokenDigest) -> Option<(String, TokenEntry)> {
    let secret_sha256 = <[u8; 32]>::try_from(d.secret_sha256.as_slice()).ok()?;
    let scope = scope_from_proto(d.scope).ok().flatten()?;
    let expires_at = match d.expires_at {
        Some(t) => Some(
            OffsetDateTime::from_unix_timestamp(t.seconds).ok()?
                + time::Duration::nanoseconds(i64::from(t.nanos)),
        ),
        None => None,
    };
    Some((
        d.id,
        TokenEntry {
            secret_sha256,
            scope,
            expires_at,
        },
    ))
}

/// A token's life from the wire (`None`: unset); an error naming the field for a negative
/// or malformed duration.
fn life(expires_in: Option<prost_types::Duration>) -> Result<Option<time::Duration>, Status> {
    let Some(d) = expires_in else {
        return Ok(None);
    };
    if d.seconds < 0 || d.nanos < 0 || d.nanos >= 1_000_000_000 {
        return Err(Status::invalid_argument(
            "expires_in: must be a positive duration",
        ));
    }
    Ok(Some(
        time::Duration::seconds(d.seconds) + time::Duration::nanoseconds(i64::from(d.nanos)),
    ))
}

#[tonic::async_trait]
impl ApiTokensService for ApiTokensGrpc {
    async fn create_api_token(
        &self,
        request: Request<apb::CreateApiTokenRequest>,
    ) -> Result<Response<apb::CreateApiTokenResponse>, Status> {
        let request = request.into_inner();
        let scope = scope_from_proto(request.scope)?;
        let life = life(request.expires_in)?;
        let (token, record) = self
            .credentials
            .create_api_token(&request.label, scope, life)
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
