//! Catalog cache per (provider, credential, region) with separate lifetimes for regions and
//! sizes (the original shared one TTL, so each sizes fetch extended a stale regions list).
//! Concurrent misses for the same key share one provider call.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::{CloudProvider, ProviderError, ProviderId, Region, Size};

/// How long catalog entries live.
#[derive(Debug, Clone, Copy)]
pub struct CatalogTtl {
    /// Regions change rarely.
    pub regions: Duration,
    /// Sizes and prices change more often.
    pub sizes: Duration,
}

impl Default for CatalogTtl {
    fn default() -> Self {
        Self {
            regions: Duration::from_secs(3600),
            sizes: Duration::from_secs(600),
        }
    }
}

type Key = (ProviderId, String, Option<String>);

struct Entry<T> {
    created: Instant,
    cell: Arc<OnceCell<T>>,
}

pub struct CatalogCache {
    ttl: CatalogTtl,
    regions: Mutex<HashMap<Key, Entry<Vec<Region>>>>,
    sizes: Mutex<HashMap<Key, Entry<Vec<Size>>>>,
}

impl std::fmt::Debug for CatalogCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl CatalogCache {
    /// An empty cache.
    pub fn new(ttl: CatalogTtl) -> Self {
        Self {
            ttl,
            regions: Mutex::default(),
            sizes: Mutex::default(),
        }
    }

    /// Regions of `client`'s provider for `credential_id`.
    pub async fn regions(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
    ) -> Result<Vec<Region>, ProviderError> {
        let cell = cell(
            &self.regions,
            (client.id(), credential_id.to_owned(), None),
            self.ttl.regions,
        );
        cell.get_or_try_init(|| client.list_regions())
            .await
            .cloned()
    }

    /// Sizes in `region`.
    pub async fn sizes(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
        region: &str,
    ) -> Result<Vec<Size>, ProviderError> {
        let key = (
            client.id(),
            credential_id.to_owned(),
            Some(region.to_owned()),
        );
        let cell = cell(&self.sizes, key, self.ttl.sizes);
        cell.get_or_try_init(|| client.list_sizes(region))
            .await
            .cloned()
    }

    /// Forgets everything about a provider (credential replaced).
    pub fn invalidate(&self, provider: ProviderId) {
        lock(&self.regions).retain(|k, _| k.0 != provider);
        lock(&self.sizes).retain(|k, _| k.0 != provider);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live cell for `key`, replacing an expired one. A failed fetch leaves the cell empty,
/// so the next caller tries again.
fn cell<T>(map: &Mutex<HashMap<Key, Entry<T>>>, key: Key, ttl: Duration) -> Arc<OnceCell<T>> {
    let mut m = lock(map);
    let now = Instant::now();
    let fresh = m
        .get(&key)
        .is_some_and(|e| now.duration_since(e.created) < ttl);
    if !fresh {
        m.insert(
            key.clone(),
            Entry {
                created: now,
                cell: Arc::new(OnceCell::new()),
            },
        );
    }
    m.get(&key).map(|e| e.cell.clone()).unwrap_or_default()
}
