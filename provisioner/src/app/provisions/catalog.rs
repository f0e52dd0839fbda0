//! Regions and sizes through the registry (the stored credential) and the catalog cache,
//! the sizes' prices where a cloud publishes them apart (read beside, cached apart, never
//! on a provision's path), and the catalog check of a provision request (an unknown region
//! or size is refused before anything is created).
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::warn;

use super::Provisioner;
use crate::app::workflow::describe_provider_error;
use crate::model::provision::catalog_id;
use crate::model::provision::{NewProvision, Placement, ProvisionError, choices};
use levelrail_clouds::catalog::{Cached, Prices};
use levelrail_clouds::pricing::attach;
use levelrail_clouds::registry::{BrokerError, RegistryError};
use levelrail_clouds::{CloudProvider, ErrorKind, ProviderError, ProviderId, Region, Size};

/// How long a size listing waits for prices not read before; the read goes on in the
/// background.
const PRICE_WAIT: Duration = Duration::from_secs(10);

impl Provisioner {
    /// The regions of `provider`. `FailedPrecondition` when no credential is stored.
    pub async fn list_regions(
        &self,
        provider: Option<ProviderId>,
    ) -> Result<Vec<Region>, ProvisionError> {
        let provider = required(provider)?;
        let credential = self.credential(provider, "list regions").await?;
        Ok(self.regions(provider, &credential).await?.to_vec())
    }

    /// The sizes of `provider` in `region`, with that region's prices. `InvalidArgument`
    /// naming `region` when it is empty or not one of the provider's.
    pub async fn list_sizes(
        &self,
        provider: Option<ProviderId>,
        region: &str,
    ) -> Result<Vec<Size>, ProvisionError> {
        let provider = required(provider)?;
        catalog_id("region", region)?;
        let credential = self.credential(provider, "list sizes").await?;
        let regions = self.regions(provider, &credential).await?;
        if !regions.iter().any(|r| r.id == region) {
            return Err(unknown_region("region", region, provider));
        }
        let sizes = self.sizes(provider, &credential, region).await?;
        let sizes = self.priced(provider, &credential, region, &sizes).await;
        Ok(sizes
            .into_iter()
            .map(|size| Size {
                unavailable_reason: self.unavailable(&size),
                ..size
            })
            .collect())
    }

    /// `sizes` with their prices where the cloud publishes them apart: the cached read
    /// (a stale one while one caller reads again in the background), or a fresh read
    /// awaited at most [`PRICE_WAIT`]; past it, the sizes say so, and the read still
    /// lands in the cache for the next listing.
    async fn priced(
        &self,
        provider: ProviderId,
        credential: &str,
        region: &str,
        sizes: &Arc<Vec<Size>>,
    ) -> Vec<Size> {
        let prices = match self.catalog.peek_prices(provider, credential, region) {
            Cached::Fresh(prices) => prices,
            Cached::Stale { value, refresh } => {
                if refresh {
                    drop(self.read_prices(provider, region, sizes));
                }
                value
            }
            Cached::Missing => {
                match tokio::time::timeout(PRICE_WAIT, self.read_prices(provider, region, sizes))
                    .await
                {
                    Ok(Ok(Some(prices))) => prices,
                    Ok(_) => Arc::new(Some(Err(
                        "the prices could not be read (see the control plane's log)".into(),
                    ))),
                    Err(_) => Arc::new(Some(Err(format!(
                        "the price API did not answer within {} s; the prices show once it has",
                        PRICE_WAIT.as_secs()
                    )))),
                }
            }
        };
        match &*prices {
            Some(read) => attach(sizes, read, region),
            None => sizes.to_vec(),
        }
    }

    /// Reads the prices of `sizes` in `region` into the catalog, in a task of its own (it
    /// finishes whoever stops waiting); `None` when no client could be had.
    fn read_prices(
        &self,
        provider: ProviderId,
        region: &str,
        sizes: &Arc<Vec<Size>>,
    ) -> JoinHandle<Option<Arc<Prices>>> {
        let (registry, catalog) = (Arc::clone(&self.registry), Arc::clone(&self.catalog));
        let (region, sizes) = (region.to_owned(), Arc::clone(sizes));
        tokio::spawn(async move {
            let client = registry.client(provider, "read prices").await;
            match client {
                Ok((client, credential)) => Some(
                    catalog
                        .prices(client.as_ref(), &credential, &region, &sizes)
                        .await,
                ),
                Err(e) => {
                    warn!(%provider, %region, error = %e, "could not read the prices");
                    None
                }
            }
        })
    }

    /// The ordered placement choices of `spec` that the catalog offers: the requested
    /// region and size first (checked strictly: an unknown region or an unusable size is
    /// refused naming `region` or `size`), then every other region × size pair where the
    /// size is offered and available. An alternative region the provider does not have, or
    /// an alternative size offered in none of the regions, is refused naming its field. The
    /// catalog (cached) is read once per region.
    pub(super) async fn plan_placements(
        &self,
        credential: &str,
        spec: &NewProvision,
    ) -> Result<Vec<Placement>, ProvisionError> {
        let provider = spec.provider;
        let regions = self.regions(provider, credential).await?;
        let known = |region: &str| regions.iter().any(|r| r.id == region);
        if !known(&spec.region) {
            return Err(unknown_region("region", &spec.region, provider));
        }
        let first = self.sizes(provider, credential, &spec.region).await?;
        self.check_size(&first, &spec.region, &spec.size, provider)?;
        let mut offered = vec![(spec.region.clone(), first)];
        for (i, region) in spec.fallback_regions.iter().enumerate() {
            if !known(region) {
                let e = unknown_region("fallback_regions", region, provider);
                return Err(at_entry(e, i));
            }
            let sizes = self.sizes(provider, credential, region).await?;
            offered.push((region.clone(), sizes));
        }
        let usable = |region: &str, size: &str| {
            offered.iter().any(|(r, sizes)| {
                r == region
                    && sizes
                        .iter()
                        .any(|s| s.id == size && self.unavailable(s).is_none())
            })
        };
        for (i, size) in spec.fallback_sizes.iter().enumerate() {
            if !spec.regions().iter().any(|r| usable(r, size)) {
                return Err(ProvisionError::InvalidArgument {
                    field: "fallback_sizes",
                    message: format!(
                        "entry {}: {size} is not offered (or cannot be provisioned) in any of the regions asked for",
                        i + 1
                    ),
                });
            }
        }
        let placements: Vec<Placement> = choices(&spec.regions(), &spec.sizes())
            .into_iter()
            .filter(|p| usable(&p.region, &p.size))
            .collect();
        for (i, region) in spec.fallback_regions.iter().enumerate() {
            if !placements.iter().any(|p| &p.region == region) {
                return Err(ProvisionError::InvalidArgument {
                    field: "fallback_regions",
                    message: format!(
                        "entry {}: none of the sizes asked for can be provisioned in {region}",
                        i + 1
                    ),
                });
            }
        }
        Ok(placements)
    }

    /// The regions of `provider` for `credential`, from the catalog: a stale entry is
    /// served while one caller refreshes it in the background; only a miss waits for the
    /// provider.
    async fn regions(
        &self,
        provider: ProviderId,
        credential: &str,
    ) -> Result<Arc<Vec<Region>>, ProvisionError> {
        match self.catalog.peek_regions(provider, credential) {
            Cached::Fresh(regions) => Ok(regions),
            Cached::Stale { value, refresh } => {
                if refresh {
                    self.refresh_catalog(provider, None);
                }
                Ok(value)
            }
            Cached::Missing => {
                let (client, credential) = self.client(provider, "list regions").await?;
                self.catalog
                    .regions(client.as_ref(), &credential)
                    .await
                    .map_err(|e| catalog_error(&e, None))
            }
        }
    }

    /// The sizes of a known `region`, from the catalog like [`Self::regions`].
    async fn sizes(
        &self,
        provider: ProviderId,
        credential: &str,
        region: &str,
    ) -> Result<Arc<Vec<Size>>, ProvisionError> {
        match self.catalog.peek_sizes(provider, credential, region) {
            Cached::Fresh(sizes) => Ok(sizes),
            Cached::Stale { value, refresh } => {
                if refresh {
                    self.refresh_catalog(provider, Some(region.to_owned()));
                }
                Ok(value)
            }
            Cached::Missing => {
                let (client, credential) = self.client(provider, "list sizes").await?;
                self.catalog
                    .sizes(client.as_ref(), &credential, region)
                    .await
                    .map_err(|e| catalog_error(&e, Some(region)))
            }
        }
    }

    /// Fetches a stale catalog entry again in the background (the sizes of `region`, or
    /// the regions); on failure the stale entry stays and is retried later.
    fn refresh_catalog(&self, provider: ProviderId, region: Option<String>) {
        let (registry, catalog) = (Arc::clone(&self.registry), Arc::clone(&self.catalog));
        tokio::spawn(async move {
            let refreshed = async {
                let (client, credential) = registry
                    .client(provider, "refresh the catalog")
                    .await
                    .map_err(|e| e.into_provider_error(provider))?;
                match &region {
                    Some(region) => catalog
                        .sizes(client.as_ref(), &credential, region)
                        .await
                        .map(drop),
                    None => catalog
                        .regions(client.as_ref(), &credential)
                        .await
                        .map(drop),
                }
            };
            if let Err(e) = refreshed.await {
                warn!(%provider, region = region.as_deref().unwrap_or(""), error = %e, "could not refresh the catalog; the cached entry is served meanwhile");
            }
        });
    }

    /// Why `size` cannot be provisioned: the provider's reason (a restricted size, one
    /// that cannot boot the image) first, else this control plane's (no agent for the
    /// size's architecture); `None` when it can.
    fn unavailable(&self, size: &Size) -> Option<String> {
        size.unavailable_reason
            .clone()
            .or_else(|| self.config.agent.unavailable_on(size.architecture))
    }

    /// Checks that `size` is offered in `region` (whose `sizes` these are) and can be
    /// provisioned there; refused naming `size`.
    fn check_size(
        &self,
        sizes: &[Size],
        region: &str,
        size: &str,
        provider: ProviderId,
    ) -> Result<(), ProvisionError> {
        let Some(found) = sizes.iter().find(|s| s.id == size) else {
            return Err(ProvisionError::InvalidArgument {
                field: "size",
                message: format!("{size} is not offered by {provider} in {region}"),
            });
        };
        match self.unavailable(found) {
            None => Ok(()),
            Some(reason) => Err(ProvisionError::InvalidArgument {
                field: "size",
                message: format!(
                    "{size} ({}) cannot be provisioned: {reason}",
                    found.architecture
                ),
            }),
        }
    }

    /// The id of `provider`'s stored credential (from memory when the broker knows it).
    pub(super) async fn credential(
        &self,
        provider: ProviderId,
        purpose: &str,
    ) -> Result<String, ProvisionError> {
        self.registry
            .credential_id(provider, purpose)
            .await
            .map_err(registry_error)
    }

    /// A client acting with the stored credential, and that credential's id.
    pub(super) async fn client(
        &self,
        provider: ProviderId,
        purpose: &str,
    ) -> Result<(Arc<dyn CloudProvider>, String), ProvisionError> {
        self.registry
            .client(provider, purpose)
            .await
            .map_err(registry_error)
    }
}

/// Why no client (or credential) could be had, for the caller.
fn registry_error(e: RegistryError) -> ProvisionError {
    match e {
        RegistryError::Unsupported(id) => ProvisionError::FailedPrecondition(format!(
            "{id} is not available on this control plane"
        )),
        RegistryError::Broker(BrokerError::NotConnected(id)) => {
            ProvisionError::FailedPrecondition(format!(
                "no credential is stored for {id}: add one under Settings › Cloud node providers"
            ))
        }
        RegistryError::Broker(BrokerError::Failed(message) | BrokerError::Unavailable(message)) => {
            ProvisionError::Unavailable(message)
        }
        RegistryError::Provider(e) => catalog_error(&e, None),
    }
}

fn required(provider: Option<ProviderId>) -> Result<ProviderId, ProvisionError> {
    provider.ok_or_else(|| ProvisionError::InvalidArgument {
        field: "provider",
        message: format!("is required: {}", ProviderId::choices()),
    })
}

/// A catalog call's failure for the caller.
fn catalog_error(e: &ProviderError, region: Option<&str>) -> ProvisionError {
    let described = describe_provider_error(e, region.unwrap_or(""));
    match e.kind {
        ErrorKind::Unauthorized => {
            ProvisionError::FailedPrecondition(format!("{}: {described}", e.provider))
        }
        ErrorKind::NotFound | ErrorKind::InvalidRequest if region.is_some() => {
            ProvisionError::InvalidArgument {
                field: "region",
                message: format!("{} refused the region: {described}", e.provider),
            }
        }
        _ => ProvisionError::Unavailable(format!("could not reach {}: {described}", e.provider)),
    }
}

/// `region` is not one of `provider`'s, refused naming `field`.
fn unknown_region(field: &'static str, region: &str, provider: ProviderId) -> ProvisionError {
    ProvisionError::InvalidArgument {
        field,
        message: format!("{region} is not a region of {provider}"),
    }
}

/// An error about entry `i` (0-based) of a list field: `entry 2: …`.
fn at_entry(e: ProvisionError, i: usize) -> ProvisionError {
    match e {
        ProvisionError::InvalidArgument { field, message } => ProvisionError::InvalidArgument {
            field,
            message: format!("entry {}: {message}", i + 1),
        },
        other => other,
    }
}
