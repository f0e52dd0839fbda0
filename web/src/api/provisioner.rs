//! ProvisionerService calls: the wizard's catalog, creating and cancelling provisions, the
//! provisions list and the `WatchProvision` stream.
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1::{
    CancelProvisionRequest, GetProvisionRequest, ListProvisionsRequest, ListRegionsRequest,
    ListSizesRequest, Provision, ProvisionEvent, ProvisionRequest, Region, RetryProvisionRequest,
    Size, WatchProvisionRequest,
};
use tonic::Streaming;

use super::credentials::missing;
use super::{Api, ApiError};

/// How many provisions the list shows at most (newest first).
const LIST_LIMIT: usize = 200;

/// An open `WatchProvision` stream. Dropping it aborts the underlying fetch.
#[derive(Debug)]
pub struct ProvisionWatch {
    stream: Streaming<ProvisionEvent>,
    api: Api,
}

impl ProvisionWatch {
    /// The next state of the provision; `Ok(None)` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<Provision>, ApiError> {
        loop {
            match self.stream.message().await {
                Ok(Some(ProvisionEvent { provision: Some(p) })) => return Ok(Some(p)),
                Ok(Some(ProvisionEvent { provision: None })) => continue,
                Ok(None) => return Ok(None),
                Err(s) => return Err(self.api.fail(s)),
            }
        }
    }
}

impl Api {
    /// Regions where `provider` can create servers.
    pub async fn list_regions(&self, provider: Provider) -> Result<Vec<Region>, ApiError> {
        let mut c = self.provisioner()?;
        match c
            .list_regions(ListRegionsRequest {
                provider: provider as i32,
            })
            .await
        {
            Ok(r) => Ok(r.into_inner().regions),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Sizes in `region`, with that region's monthly price when published.
    pub async fn list_sizes(
        &self,
        provider: Provider,
        region: String,
    ) -> Result<Vec<Size>, ApiError> {
        let mut c = self.provisioner()?;
        match c
            .list_sizes(ListSizesRequest {
                provider: provider as i32,
                region,
            })
            .await
        {
            Ok(r) => Ok(r.into_inner().sizes),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Starts a provision; it comes back in `creating`.
    pub async fn provision(&self, req: ProvisionRequest) -> Result<Provision, ApiError> {
        let mut c = self.provisioner()?;
        match c.provision(req).await {
            Ok(r) => r.into_inner().provision.ok_or_else(missing),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Provisions, newest first (up to 200).
    pub async fn list_provisions(&self) -> Result<Vec<Provision>, ApiError> {
        let mut c = self.provisioner()?;
        let mut all = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = ListProvisionsRequest {
                page_size: 100,
                page_token,
            };
            let r = match c.list_provisions(req).await {
                Ok(r) => r.into_inner(),
                Err(s) => return Err(self.fail(s)),
            };
            all.extend(r.provisions);
            if r.next_page_token.is_empty() || all.len() >= LIST_LIMIT {
                all.truncate(LIST_LIMIT);
                return Ok(all);
            }
            page_token = r.next_page_token;
        }
    }

    /// Opens the live status stream of one provision (the current state comes first).
    pub async fn watch_provision(&self, id: String) -> Result<ProvisionWatch, ApiError> {
        let mut c = self.provisioner()?;
        match c.watch_provision(WatchProvisionRequest { id }).await {
            Ok(r) => Ok(ProvisionWatch {
                stream: r.into_inner(),
                api: *self,
            }),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// One provision.
    pub async fn get_provision(&self, id: String) -> Result<Provision, ApiError> {
        let mut c = self.provisioner()?;
        match c.get_provision(GetProvisionRequest { id }).await {
            Ok(r) => r.into_inner().provision.ok_or_else(missing),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Starts a new provision with a failed one's settings; `request_id` makes a repeated
    /// click start one provision.
    pub async fn retry_provision(
        &self,
        id: String,
        request_id: String,
    ) -> Result<Provision, ApiError> {
        let mut c = self.provisioner()?;
        match c
            .retry_provision(RetryProvisionRequest { id, request_id })
            .await
        {
            Ok(r) => r.into_inner().provision.ok_or_else(missing),
            Err(s) => Err(self.fail(s)),
        }
    }

    /// Cancels an in-flight provision (its server is deleted).
    pub async fn cancel_provision(&self, id: String) -> Result<Provision, ApiError> {
        let mut c = self.provisioner()?;
        match c.cancel_provision(CancelProvisionRequest { id }).await {
            Ok(r) => r.into_inner().provision.ok_or_else(missing),
            Err(s) => Err(self.fail(s)),
        }
    }
}
