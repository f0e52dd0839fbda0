//! What a demo cloud is: how the demo clouds behave, and what each one hands over once it
//! runs. A leaf: each fake's `demo.rs` builds a [`DemoCloud`], and `crate::demo` starts them.
use std::any::Any;
use std::time::Duration;

use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{ApiToken, Provider, SetCredentialRequest};
use levelrail_types::ProviderId;

use super::BootHook;

/// How the demo clouds behave.
#[derive(Clone)]
pub struct DemoOptions {
    /// Called once per server when it reaches its running state.
    pub boot_hook: BootHook,
    /// The life of every access token and session the clouds issue (`None`: an hour, as
    /// real clouds issue them).
    pub token_lifetime: Option<Duration>,
    /// Regions (GCP: zones or regions) where every server create fails with the cloud's
    /// capacity error.
    pub full_regions: Vec<String>,
}

impl std::fmt::Debug for DemoOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoOptions")
            .field("token_lifetime", &self.token_lifetime)
            .field("full_regions", &self.full_regions)
            .finish_non_exhaustive()
    }
}

/// One running demo cloud.
pub struct DemoCloud {
    pub id: ProviderId,
    /// Where its endpoints are, by the keys the cloud's client declares
    /// (`levelrail_clouds::cloud::Endpoint::key`).
    pub urls: Vec<(&'static str, String)>,
    /// The root certificate (PEM) of a cloud served over HTTPS.
    pub ca_pem: Option<String>,
    /// A credential it accepts, as a client would store it.
    pub credential: SetCredentialRequest,
    /// Keeps it running; dropping it stops the cloud.
    pub handle: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for DemoCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoCloud")
            .field("id", &self.id)
            .field("urls", &self.urls)
            .finish_non_exhaustive()
    }
}

/// The request that stores `token` for a cloud whose credential is an API token.
pub(crate) fn api_token(id: ProviderId, token: &str) -> SetCredentialRequest {
    SetCredentialRequest {
        provider: Provider::from(id).into(),
        credential: Some(Credential::ApiToken(ApiToken {
            token: token.to_owned(),
        })),
    }
}
