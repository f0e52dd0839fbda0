//! The fake cloud as one grant sees it: a call made after the grant expired, or with a
//! token the cloud revoked, is refused with a 401, as a token cloud refuses it.
use std::sync::Arc;

use async_trait::async_trait;

use super::fake::FakeProvider;
use crate::model::ports::Clock;
use levelrail_clouds::{
    CapabilityReport, CloudProvider, CreateServer, Ownership, PollTarget, ProviderError,
    ProviderId, Region, ServerInfo, Size,
};

/// The fake cloud as seen with one grant: every call after the grant's expiry (by the
/// bench's clock) is refused with a 401, as a token cloud refuses an expired token.
pub(crate) struct GrantedClient {
    pub(crate) inner: Arc<FakeProvider>,
    /// The grant's token.
    pub(crate) token: String,
    /// The grant's expiry in UNIX nanoseconds (`None`: it does not expire).
    pub(crate) expires: Option<i128>,
    pub(crate) clock: Clock,
}

impl std::fmt::Debug for GrantedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantedClient")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl GrantedClient {
    fn check(&self) -> Result<(), ProviderError> {
        let now = (self.clock)().unix_timestamp_nanos();
        let expired = self.expires.is_some_and(|at| now >= at);
        self.inner.admit_grant(&self.token, expired)
    }
}

#[async_trait]
impl CloudProvider for GrantedClient {
    fn id(&self) -> ProviderId {
        ProviderId::Hetzner
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        self.check()?;
        self.inner.list_regions().await
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        self.check()?;
        self.inner.list_sizes(region).await
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        self.check()?;
        self.inner.create_server(req).await
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        self.check()?;
        self.inner.get_server(id).await
    }

    fn poll_batch(&self) -> usize {
        self.inner.poll_batch()
    }

    fn poll_group(&self, server_id: &str) -> Option<String> {
        self.inner.poll_group(server_id)
    }

    async fn poll_servers(
        &self,
        control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        self.check()?;
        self.inner.poll_servers(control_plane, targets).await
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        self.check()?;
        self.inner
            .delete_provision_resources(server, ownership)
            .await
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        self.check()?;
        self.inner.list_servers(control_plane).await
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        self.check()?;
        self.inner.probe().await
    }
}
