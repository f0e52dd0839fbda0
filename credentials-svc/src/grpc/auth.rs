//! Bearer-token authentication for every public RPC, as a tonic interceptor: it runs on the
//! request headers before the message is decoded, so an unauthenticated caller costs no
//! decoding and learns nothing about the request's validity.
use secrecy::SecretString;
use tonic::{Request, Status};
use tracing::debug;

use crate::app::api_token::ApiTokenVerifier;

/// The id of the API token that authenticated a request, attached as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `lrt_…`
    pub token_id: String,
}

/// Interceptor requiring `authorization: Bearer <api token>`.
#[derive(Debug, Clone)]
pub struct BearerAuth {
    verifier: ApiTokenVerifier,
}

impl BearerAuth {
    /// Checks tokens against `verifier`.
    pub fn new(verifier: ApiTokenVerifier) -> Self {
        Self { verifier }
    }
}

impl tonic::service::Interceptor for BearerAuth {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if !self.verifier.is_synced() {
            return Err(Status::unavailable(
                "the API tokens are not loaded yet: the credentials service has not been reached",
            ));
        }
        let header = req
            .metadata()
            .get("authorization")
            .ok_or_else(|| Status::unauthenticated("missing bearer token"))?;
        let value = header
            .to_str()
            .map_err(|_| Status::unauthenticated("malformed authorization header"))?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .ok_or_else(|| Status::unauthenticated("authorization must be a bearer token"))?;
        let token = SecretString::from(token.trim().to_owned());
        match self.verifier.verify(&token) {
            Some(token_id) => {
                req.extensions_mut().insert(Caller { token_id });
                Ok(req)
            }
            None => {
                debug!("rejected an invalid API token");
                Err(Status::unauthenticated("invalid API token"))
            }
        }
    }
}
