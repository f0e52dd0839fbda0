//! ProvisionerService calls: the wizard's catalog, creating and cancelling provisions, the
//! provisions list and the `WatchProvision` stream.
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1::{
    CancelProvisionRequest, CancelProvisionResponse, GetProvisionRequest, GetProvisionResponse,
    ListProvisionsRequest, ListProvisionsResponse, ListRegionsRequest, ListRegionsResponse,
    ListSizesRequest, ListSizesResponse, Provision, ProvisionEvent, ProvisionRequest,
    ProvisionResponse, Region, RetryProvisionRequest, Size, WatchProvisionRequest,
};

use super::credentials::missing;
use super::transport::Streaming;
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
        let request = ListRegionsRequest {
            provider: provider as i32,
        };
        let r: ListRegionsResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/ListRegions",
                request,
            )
            .await?;
        Ok(r.regions)
    }

    /// Sizes in `region`, with that region's monthly price when published.
    pub async fn list_sizes(
        &self,
        provider: Provider,
        region: String,
    ) -> Result<Vec<Size>, ApiError> {
        let request = ListSizesRequest {
            provider: provider as i32,
            region,
        };
        let r: ListSizesResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/ListSizes",
                request,
            )
            .await?;
        Ok(r.sizes)
    }

    /// Starts a provision; it comes back in `creating`.
    pub async fn provision(&self, req: ProvisionRequest) -> Result<Provision, ApiError> {
        let r: ProvisionResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/Provision",
                req,
            )
            .await?;
        r.provision.ok_or_else(missing)
    }

    /// Provisions, newest first (up to 200).
    pub async fn list_provisions(&self) -> Result<Vec<Provision>, ApiError> {
        let mut all = Vec::new();
        let mut page_token = String::new();
        loop {
            let req = ListProvisionsRequest {
                page_size: 100,
                page_token,
            };
            let r: ListProvisionsResponse = self
                .unary(
                    "/levelrail.provisioner.v1.ProvisionerService/ListProvisions",
                    req,
                )
                .await?;
            all.extend(r.provisions);
            if r.next_page_token.is_empty() || all.len() >= LIST_LIMIT {
                all.truncate(LIST_LIMIT);
                return Ok(all);
            }
            page_token = r.next_page_token;
        }
    }

    /// One provision.
    pub async fn get_provision(&self, id: String) -> Result<Provision, ApiError> {
        let r: GetProvisionResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/GetProvision",
                GetProvisionRequest { id },
            )
            .await?;
        r.provision.ok_or_else(missing)
    }

    /// Starts a new provision with a failed one's settings; `request_id` makes a repeated
    /// click start one provision.
    pub async fn retry_provision(
        &self,
        id: String,
        request_id: String,
    ) -> Result<Provision, ApiError> {
        let r: ProvisionResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/RetryProvision",
                RetryProvisionRequest { id, request_id },
            )
            .await?;
        r.provision.ok_or_else(missing)
    }

    /// Opens the live status stream of one provision (the current state comes first).
    pub async fn watch_provision(&self, id: String) -> Result<ProvisionWatch, ApiError> {
        let stream = self
            .streaming(
                "/levelrail.provisioner.v1.ProvisionerService/WatchProvision",
                WatchProvisionRequest { id },
            )
            .await?;
        Ok(ProvisionWatch { stream, api: *self })
    }

    /// Cancels an in-flight provision (its server is deleted).
    pub async fn cancel_provision(&self, id: String) -> Result<Provision, ApiError> {
        let r: CancelProvisionResponse = self
            .unary(
                "/levelrail.provisioner.v1.ProvisionerService/CancelProvision",
                CancelProvisionRequest { id },
            )
            .await?;
        r.provision.ok_or_else(missing)
    }
}
