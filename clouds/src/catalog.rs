//! Catalog cache per (provider, credential, region) with separate lifetimes for regions and
//! sizes (the original shared one TTL, so each sizes fetch extended a stale regions list).
//! Concurrent misses for the same key share one provider call. An expired entry is kept:
//! [`CatalogCache::peek_regions`] and [`CatalogCache::peek_sizes`] serve it as
//! [`Cached::Stale`] and hand one caller at a time the refresh, so the request path never
//! waits for a provider once the catalog was read.
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

/// After a refresh was handed out, how long until another caller is handed one (a refresh
/// that failed leaves the stale entry in place; the provider is not asked on every call).
const REFRESH_RETRY: Duration = Duration::from_secs(30);

/// How long sizes whose price API failed are served before they are fetched again.
const PRICE_RETRY: Duration = Duration::from_secs(60);

/// When `sizes` count as fetched: now, or, when their price API failed, as long ago as
/// makes them expire after [`PRICE_RETRY`] (the sizes are served meanwhile, and their
/// prices asked for again then).
fn fetched_at(sizes: &[Size], ttl: Duration) -> Instant {
    let now = Instant::now();
    if !sizes
        .iter()
        .any(|s| matches!(s.pricing, crate::Pricing::Failed(_)))
    {
        return now;
    }
    now.checked_sub(ttl.saturating_sub(PRICE_RETRY))
        .unwrap_or(now)
}

/// What the cache holds for a key, without calling the provider.
#[derive(Debug, Clone, PartialEq)]
pub enum Cached<T> {
    /// Younger than its lifetime.
    Fresh(Arc<T>),
    /// Past its lifetime. `refresh`: this caller is the one to fetch it again (in the
    /// background, with [`CatalogCache::regions`] or [`CatalogCache::sizes`]).
    Stale { value: Arc<T>, refresh: bool },
    /// Never fetched (or its every fetch failed).
    Missing,
}

type Key = (ProviderId, String, Option<String>);

struct Entry<T> {
    /// The value and when it was fetched.
    cell: Arc<OnceCell<(Instant, Arc<T>)>>,
    /// The value of the entry this one replaced, served while this one is fetched.
    previous: Option<Arc<T>>,
    /// When a refresh was last handed out by a peek.
    refresh_claimed: Option<Instant>,
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

    /// Regions of `client`'s provider for `credential_id`: the cached ones while fresh,
    /// else fetched (one call however many ask at once).
    pub async fn regions(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
    ) -> Result<Arc<Vec<Region>>, ProviderError> {
        let cell = cell(
            &self.regions,
            (client.id(), credential_id.to_owned(), None),
            self.ttl.regions,
        );
        let (_, regions) = cell
            .get_or_try_init(|| async {
                let regions = client.list_regions().await?;
                Ok((Instant::now(), Arc::new(regions)))
            })
            .await?;
        Ok(Arc::clone(regions))
    }

    /// Sizes in `region`: the cached ones while fresh, else fetched.
    pub async fn sizes(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
        region: &str,
    ) -> Result<Arc<Vec<Size>>, ProviderError> {
        let key = (
            client.id(),
            credential_id.to_owned(),
            Some(region.to_owned()),
        );
        let cell = cell(&self.sizes, key, self.ttl.sizes);
        let (_, sizes) = cell
            .get_or_try_init(|| async {
                let sizes = client.list_sizes(region).await?;
                Ok((fetched_at(&sizes, self.ttl.sizes), Arc::new(sizes)))
            })
            .await?;
        Ok(Arc::clone(sizes))
    }

    /// The cached regions of `provider` for `credential_id`, with no provider call.
    pub fn peek_regions(&self, provider: ProviderId, credential_id: &str) -> Cached<Vec<Region>> {
        peek(
            &self.regions,
            &(provider, credential_id.to_owned(), None),
            self.ttl.regions,
        )
    }

    /// The cached sizes of `region`, with no provider call.
    pub fn peek_sizes(
        &self,
        provider: ProviderId,
        credential_id: &str,
        region: &str,
    ) -> Cached<Vec<Size>> {
        let key = (provider, credential_id.to_owned(), Some(region.to_owned()));
        peek(&self.sizes, &key, self.ttl.sizes)
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

/// The live cell for `key`, replacing an expired one (whose value is kept as the new one's
/// `previous`). A failed fetch leaves the cell empty, so the next caller tries again.
fn cell<T>(
    map: &Mutex<HashMap<Key, Entry<T>>>,
    key: Key,
    ttl: Duration,
) -> Arc<OnceCell<(Instant, Arc<T>)>> {
    let mut m = lock(map);
    let entry = m.entry(key).or_insert_with(|| Entry {
        cell: Arc::new(OnceCell::new()),
        previous: None,
        refresh_claimed: None,
    });
    if let Some((fetched, value)) = entry.cell.get()
        && fetched.elapsed() >= ttl
    {
        *entry = Entry {
            cell: Arc::new(OnceCell::new()),
            previous: Some(Arc::clone(value)),
            refresh_claimed: entry.refresh_claimed,
        };
    }
    Arc::clone(&entry.cell)
}

/// What `key` holds, claiming the refresh of a stale value for this caller when nobody
/// was handed one in the last [`REFRESH_RETRY`].
fn peek<T>(map: &Mutex<HashMap<Key, Entry<T>>>, key: &Key, ttl: Duration) -> Cached<T> {
    let mut m = lock(map);
    let Some(entry) = m.get_mut(key) else {
        return Cached::Missing;
    };
    let now = Instant::now();
    let value = match entry.cell.get() {
        Some((fetched, v)) if now.duration_since(*fetched) < ttl => {
            return Cached::Fresh(Arc::clone(v));
        }
        Some((_, v)) => Arc::clone(v),
        None => match &entry.previous {
            Some(v) => Arc::clone(v),
            None => return Cached::Missing,
        },
    };
    let refresh = entry
        .refresh_claimed
        .is_none_or(|at| now.duration_since(at) >= REFRESH_RETRY);
    if refresh {
        entry.refresh_claimed = Some(now);
    }
    Cached::Stale { value, refresh }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        (ProviderId::Hetzner, "c1".into(), None)
    }

    #[tokio::test(start_paused = true)]
    async fn sizes_without_their_prices_expire_after_a_minute() {
        // Paused time starts at the runtime's start: step past a lifetime first.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let ttl = Duration::from_secs(600);
        let size = |pricing| Size {
            id: "s".into(),
            name: "s".into(),
            vcpus: 1,
            memory_mb: 1024,
            disk_gb: 0,
            pricing,
            architecture: levelrail_types::CpuArch::X86_64,
            unavailable_reason: None,
        };
        let priced = [size(crate::Pricing::Unlisted("none".into()))];
        assert_eq!(fetched_at(&priced, ttl), Instant::now());
        let failed = [size(crate::Pricing::Failed("refused".into()))];
        let at = fetched_at(&failed, ttl);
        assert_eq!(Instant::now() - at, ttl - PRICE_RETRY);

        let map: Mutex<HashMap<Key, Entry<Vec<Size>>>> = Mutex::default();
        cell(&map, key(), ttl)
            .set((at, Arc::new(failed.to_vec())))
            .expect("set");
        assert!(matches!(peek(&map, &key(), ttl), Cached::Fresh(_)));
        tokio::time::advance(PRICE_RETRY).await;
        assert!(matches!(
            peek(&map, &key(), ttl),
            Cached::Stale { refresh: true, .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_entry_is_served_stale_and_one_caller_at_a_time_refreshes_it() {
        let map: Mutex<HashMap<Key, Entry<u32>>> = Mutex::default();
        let ttl = Duration::from_secs(60);
        assert_eq!(peek(&map, &key(), ttl), Cached::Missing);
        let c = cell(&map, key(), ttl);
        assert_eq!(
            peek(&map, &key(), ttl),
            Cached::Missing,
            "a fetch in flight"
        );
        c.set((Instant::now(), Arc::new(1))).expect("set");
        assert_eq!(peek(&map, &key(), ttl), Cached::Fresh(Arc::new(1)));

        tokio::time::advance(ttl).await;
        let stale = |refresh| Cached::Stale {
            value: Arc::new(1),
            refresh,
        };
        assert_eq!(peek(&map, &key(), ttl), stale(true));
        assert_eq!(
            peek(&map, &key(), ttl),
            stale(false),
            "one refresh at a time"
        );

        // The refresh replaces the cell; the old value is served until it lands.
        let refreshing = cell(&map, key(), ttl);
        assert!(!Arc::ptr_eq(&c, &refreshing));
        assert_eq!(peek(&map, &key(), ttl), stale(false));
        tokio::time::advance(REFRESH_RETRY).await;
        assert_eq!(
            peek(&map, &key(), ttl),
            stale(true),
            "a failed refresh is retried later"
        );
        refreshing.set((Instant::now(), Arc::new(2))).expect("set");
        assert_eq!(peek(&map, &key(), ttl), Cached::Fresh(Arc::new(2)));
    }
}
