//! Bearer-token authentication for every public RPC, as a tonic interceptor: it runs on the
//! request headers before the message is decoded, so an unauthenticated caller costs no
//! decoding and learns nothing about the request's validity.
use secrecy::SecretString;
use tonic::{Request, Status};
use tracing::debug;

use levelrail_types::ApiScope;

use crate::app::api_token::{ApiTokenVerifier, Refused};

/// The API token that authenticated a request, attached as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `lrt_…`
    pub token_id: String,
    /// What it may call.
    pub scope: ApiScope,
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

    /// The tokens this checks against (an open stream watches its token there).
    pub fn verifier(&self) -> &ApiTokenVerifier {
        &self.verifier
    }
}

impl BearerAuth {
    /// The caller an `authorization` header value names, or the status to answer: what
    /// the interceptor checks, for a listener to check before it reads a request's body.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Caller, Status> {
        if !self.verifier.is_synced() {
            return Err(Status::unavailable(
                "the API tokens are not loaded yet: the credentials service has not been reached",
            ));
        }
        let header =
            authorization.ok_or_else(|| Status::unauthenticated("missing bearer token"))?;
        let value = std::str::from_utf8(header)
            .map_err(|_| Status::unauthenticated("malformed authorization header"))?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .ok_or_else(|| Status::unauthenticated("authorization must be a bearer token"))?;
        let token = SecretString::from(token.trim().to_owned());
        match self.verifier.verify(&token) {
            Ok(t) => Ok(Caller {
                token_id: t.token_id,
                scope: t.scope,
            }),
            Err(Refused::Invalid) => {
                debug!("rejected an invalid API token");
                Err(Status::unauthenticated("invalid API token"))
            }
            Err(Refused::Expired) => Err(Status::unauthenticated(
                "this API token has expired: ask an admin for a new one",
            )),
        }
    }

    /// Whether `caller` may call the gRPC method `path` (`/package.Service/Method`):
    /// PERMISSION_DENIED naming the scope it needs otherwise.
    pub fn authorize(caller: &Caller, path: &str) -> Result<(), Status> {
        let needed = ApiScope::needed_for(path);
        if caller.scope.includes(needed) {
            return Ok(());
        }
        let method = levelrail_types::method_of(path);
        Err(Status::permission_denied(format!(
            "API token {} has scope `{}`; {method} needs `{needed}`{}",
            caller.token_id,
            caller.scope,
            if needed == ApiScope::Admin {
                ""
            } else {
                " or `admin`"
            }
        )))
    }
}

impl tonic::service::Interceptor for BearerAuth {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        // The listener checked the token already (before reading the body).
        if req.extensions().get::<Caller>().is_some() {
            return Ok(req);
        }
        // Without the listener's guard, the method is not known here: only a token that
        // may call everything is let through.
        let header = req.metadata().get("authorization").map(|v| v.as_bytes());
        let caller = self.authenticate(header)?;
        if caller.scope != ApiScope::Admin {
            return Err(Status::permission_denied(format!(
                "API token {} has scope `{}`; this listener takes admin tokens only",
                caller.token_id, caller.scope
            )));
        }
        req.extensions_mut().insert(caller);
        Ok(req)
    }
}
