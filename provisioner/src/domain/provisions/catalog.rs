//! Regions and sizes through the registry (the stored credential) and the catalog cache,
//! and the catalog check of a provision request (an unknown region or size is refused
//! before anything is created).
use std::sync::Arc;

use super::Provisioner;
use crate::domain::provision::catalog_id;
use crate::domain::provision::{NewProvision, Placement, ProvisionError, choices};
use crate::providers::registry::{BrokerError, RegistryError};
use crate::providers::{CloudProvider, ErrorKind, ProviderError, ProviderId, Region, Size};
use crate::workflow::describe_provider_error;

impl Provisioner {
    /// The regions of `provider`. `FailedPrecondition` when no credential is stored.
    pub async fn list_regions(
        &self,
        provider: Option<ProviderId>,
    ) -> Result<Vec<Region>, ProvisionError> {
        let provider = required(provider)?;
        let (client, credential) = self.client(provider, "list regions").await?;
        self.catalog
            .regions(client.as_ref(), &credential)
            .await
            .map_err(|e| catalog_error(&e, None))
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
        let (client, credential) = self.client(provider, "list sizes").await?;
        self.sizes_in(client.as_ref(), &credential, region).await
    }

    /// Checks `region` and `size` against the provider's catalog.
    pub(super) async fn check_catalog(
        &self,
        client: &dyn CloudProvider,
        credential: &str,
        region: &str,
        size: &str,
    ) -> Result<(), ProvisionError> {
        let sizes = self.sizes_in(client, credential, region).await?;
        if let Some(found) = sizes.iter().find(|s| s.id == size) {
            match &found.unavailable_reason {
                None => Ok(()),
                Some(reason) => Err(ProvisionError::InvalidArgument {
                    field: "size",
                    message: format!(
                        "{size} ({}) cannot be provisioned: {reason}",
                        found.architecture
                    ),
                }),
            }
        } else {
            Err(ProvisionError::InvalidArgument {
                field: "size",
                message: format!("{size} is not offered by {} in {region}", client.id()),
            })
        }
    }

    /// The ordered placement choices of `spec` that the catalog offers: the requested
    /// region and size first (checked strictly, as [`Self::check_catalog`]), then every
    /// other region × size pair where the size is offered and available. An alternative
    /// region the provider does not have, or an alternative size offered in none of the
    /// regions, is refused naming its field.
    pub(super) async fn plan_placements(
        &self,
        client: &dyn CloudProvider,
        credential: &str,
        spec: &NewProvision,
    ) -> Result<Vec<Placement>, ProvisionError> {
        self.check_catalog(client, credential, &spec.region, &spec.size)
            .await?;
        let regions = self
            .catalog
            .regions(client, credential)
            .await
            .map_err(|e| catalog_error(&e, None))?;
        for (i, region) in spec.fallback_regions.iter().enumerate() {
            if !regions.iter().any(|r| &r.id == region) {
                return Err(ProvisionError::InvalidArgument {
                    field: "fallback_regions",
                    message: format!(
                        "entry {}: {region} is not a region of {}",
                        i + 1,
                        client.id()
                    ),
                });
            }
        }
        let mut offered = Vec::new();
        for region in spec.regions() {
            let sizes = self.sizes_in(client, credential, &region).await?;
            offered.push((region, sizes));
        }
        let usable = |region: &str, size: &str| {
            offered.iter().any(|(r, sizes)| {
                r == region
                    && sizes
                        .iter()
                        .any(|s| s.id == size && s.unavailable_reason.is_none())
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

    async fn sizes_in(
        &self,
        client: &dyn CloudProvider,
        credential: &str,
        region: &str,
    ) -> Result<Vec<Size>, ProvisionError> {
        let regions = self
            .catalog
            .regions(client, credential)
            .await
            .map_err(|e| catalog_error(&e, None))?;
        if !regions.iter().any(|r| r.id == region) {
            return Err(ProvisionError::InvalidArgument {
                field: "region",
                message: format!("{region} is not a region of {}", client.id()),
            });
        }
        let mut sizes = self
            .catalog
            .sizes(client, credential, region)
            .await
            .map_err(|e| catalog_error(&e, Some(region)))?;
        for size in &mut sizes {
            // The provider's reason (a restricted size, one that cannot boot the image) first.
            size.unavailable_reason = size
                .unavailable_reason
                .take()
                .or_else(|| self.config.agent.unavailable_on(size.architecture));
        }
        Ok(sizes)
    }

    /// A client acting with the stored credential, and that credential's id.
    pub(super) async fn client(
        &self,
        provider: ProviderId,
        purpose: &str,
    ) -> Result<(Arc<dyn CloudProvider>, String), ProvisionError> {
        self.registry.client(provider, purpose).await.map_err(|e| match e {
            RegistryError::Unsupported(id) => {
                ProvisionError::FailedPrecondition(format!("{id} is not available on this control plane"))
            }
            RegistryError::Broker(BrokerError::NotConnected(id)) => ProvisionError::FailedPrecondition(format!(
                "no credential is stored for {id}: add one under Settings › Cloud node providers"
            )),
            RegistryError::Broker(BrokerError::Failed(message)) => ProvisionError::Unavailable(message),
            RegistryError::Provider(e) => catalog_error(&e, None),
        })
    }
}

fn required(provider: Option<ProviderId>) -> Result<ProviderId, ProvisionError> {
    provider.ok_or_else(|| ProvisionError::InvalidArgument {
        field: "provider",
        message: "is required: hetzner, digitalocean, aws, azure or gcp".into(),
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
