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

use super::pricing::PriceRead;
use super::{CloudProvider, ProviderError, ProviderId, Region, Size};

/// How long catalog entries live.
#[derive(Debug, Clone, Copy)]
pub struct CatalogTtl {
    /// Regions change rarely.
    pub regions: Duration,
    /// Sizes change more often.
    pub sizes: Duration,
    /// A price read of a cloud that prices its sizes apart (a failed read lives
    /// [`PRICE_RETRY`]).
    pub prices: Duration,
}

impl Default for CatalogTtl {
    fn default() -> Self {
        Self {
            regions: Duration::from_secs(3600),
            sizes: Duration::from_secs(600),
            prices: Duration::from_secs(3600),
        }
    }
}

/// What the cache holds of a region's prices: `None` where the sizes carry their own.
pub type Prices = Option<PriceRead>;

/// After a refresh was handed out, how long until another caller is handed one (a refresh
/// that failed leaves the stale entry in place; the provider is not asked on every call).
const REFRESH_RETRY: Duration = Duration::from_secs(30);

/// How long a failed price read is served before the prices are read again.
pub const PRICE_RETRY: Duration = Duration::from_secs(60);

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
    prices: Mutex<HashMap<Key, Entry<Prices>>>,
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
            prices: Mutex::default(),
        }
    }

    /// Regions of `client`'s provider for `credential_id`: the cached ones while fresh,
    /// else fetched (one call however many ask at once).
    pub async fn regions(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
    ) -> Result<Arc<Vec<Region>>, ProviderError> {
        let ttl = self.ttl.regions;
        let cell = cell(
            &self.regions,
            (client.id(), credential_id.to_owned(), None),
            |_| ttl,
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
        let ttl = self.ttl.sizes;
        let cell = cell(&self.sizes, key, |_| ttl);
        let (_, sizes) = cell
            .get_or_try_init(|| async {
                let sizes = client.list_sizes(region).await?;
                Ok((Instant::now(), Arc::new(sizes)))
            })
            .await?;
        Ok(Arc::clone(sizes))
    }

    /// The prices of `sizes` (the sizes of `region`) where `client`'s cloud reads them
    /// apart: the cached read while fresh, else read (one read however many ask at once).
    /// A failed read is served [`PRICE_RETRY`], unless an earlier read succeeded: those
    /// prices are kept instead.
    pub async fn prices(
        &self,
        client: &dyn CloudProvider,
        credential_id: &str,
        region: &str,
        sizes: &[Size],
    ) -> Arc<Prices> {
        let key = (
            client.id(),
            credential_id.to_owned(),
            Some(region.to_owned()),
        );
        let ttl = self.ttl.prices;
        let last_known = previous(&self.prices, &key).filter(|p| matches!(**p, Some(Ok(_))));
        let cell = cell(&self.prices, key, |p| price_ttl(p, ttl));
        let (_, prices) = cell
            .get_or_init(|| async {
                let read = client.list_prices(region, sizes).await;
                let kept = match (&read, last_known) {
                    (Some(Err(_)), Some(known)) => known,
                    _ => Arc::new(read),
                };
                (Instant::now(), kept)
            })
            .await;
        Arc::clone(prices)
    }

    /// The cached regions of `provider` for `credential_id`, with no provider call.
    pub fn peek_regions(&self, provider: ProviderId, credential_id: &str) -> Cached<Vec<Region>> {
        let ttl = self.ttl.regions;
        peek(
            &self.regions,
            &(provider, credential_id.to_owned(), None),
            |_| ttl,
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
        let ttl = self.ttl.sizes;
        peek(&self.sizes, &key, |_| ttl)
    }

    /// The cached prices of `region`, with no provider call.
    pub fn peek_prices(
        &self,
        provider: ProviderId,
        credential_id: &str,
        region: &str,
    ) -> Cached<Prices> {
        let key = (provider, credential_id.to_owned(), Some(region.to_owned()));
        let ttl = self.ttl.prices;
        peek(&self.prices, &key, |p| price_ttl(p, ttl))
    }

    /// Forgets everything about a provider (credential replaced).
    pub fn invalidate(&self, provider: ProviderId) {
        lock(&self.regions).retain(|k, _| k.0 != provider);
        lock(&self.sizes).retain(|k, _| k.0 != provider);
        lock(&self.prices).retain(|k, _| k.0 != provider);
    }
}

/// How long a price read lives: `ttl`, or [`PRICE_RETRY`] when it failed.
fn price_ttl(prices: &Prices, ttl: Duration) -> Duration {
    match prices {
        Some(Err(_)) => PRICE_RETRY,
        _ => ttl,
    }
}

/// The value `key` held before its current cell, or holds now.
fn previous<T>(map: &Mutex<HashMap<Key, Entry<T>>>, key: &Key) -> Option<Arc<T>> {
    let m = lock(map);
    let entry = m.get(key)?;
    entry
        .cell
        .get()
        .map(|(_, v)| Arc::clone(v))
        .or_else(|| entry.previous.clone())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live cell for `key`, replacing an expired one (whose value is kept as the new one's
/// `previous`). A failed fetch leaves the cell empty, so the next caller tries again.
fn cell<T>(
    map: &Mutex<HashMap<Key, Entry<T>>>,
    key: Key,
    ttl: impl Fn(&T) -> Duration,
) -> Arc<OnceCell<(Instant, Arc<T>)>> {
    let mut m = lock(map);
    let entry = m.entry(key).or_insert_with(|| Entry {
        cell: Arc::new(OnceCell::new()),
        previous: None,
        refresh_claimed: None,
    });
    if let Some((fetched, value)) = entry.cell.get()
        && fetched.elapsed() >= ttl(value)
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
fn peek<T>(
    map: &Mutex<HashMap<Key, Entry<T>>>,
    key: &Key,
    ttl: impl Fn(&T) -> Duration,
) -> Cached<T> {
    let mut m = lock(map);
    let Some(entry) = m.get_mut(key) else {
        return Cached::Missing;
    };
    let now = Instant::now();
    let value = match entry.cell.get() {
        Some((fetched, v)) if now.duration_since(*fetched) < ttl(v) => {
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
    async fn a_failed_price_read_lives_a_minute_and_a_good_one_its_lifetime() {
        let ttl = Duration::from_secs(3600);
        let map: Mutex<HashMap<Key, Entry<Prices>>> = Mutex::default();
        let life = |p: &Prices| price_ttl(p, ttl);
        let failed: Prices = Some(Err("refused".into()));
        cell(&map, key(), life)
            .set((Instant::now(), Arc::new(failed)))
            .expect("set");
        assert!(matches!(peek(&map, &key(), life), Cached::Fresh(_)));
        tokio::time::advance(PRICE_RETRY).await;
        assert!(matches!(
            peek(&map, &key(), life),
            Cached::Stale { refresh: true, .. }
        ));
        let next = cell(&map, key(), life);
        assert!(
            matches!(previous(&map, &key()).as_deref(), Some(Some(Err(_)))),
            "the failed read is what the refresh replaces"
        );
        let good: Prices = Some(Ok(crate::pricing::PriceList::new()));
        next.set((Instant::now(), Arc::new(good))).expect("set");
        tokio::time::advance(PRICE_RETRY * 2).await;
        assert!(
            matches!(peek(&map, &key(), life), Cached::Fresh(_)),
            "a good read lives its lifetime"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_entry_is_served_stale_and_one_caller_at_a_time_refreshes_it() {
        let map: Mutex<HashMap<Key, Entry<u32>>> = Mutex::default();
        let ttl = Duration::from_secs(60);
        assert_eq!(peek(&map, &key(), |_| ttl), Cached::Missing);
        let c = cell(&map, key(), |_| ttl);
        assert_eq!(
            peek(&map, &key(), |_| ttl),
            Cached::Missing,
            "a fetch in flight"
        );
        c.set((Instant::now(), Arc::new(1))).expect("set");
        assert_eq!(peek(&map, &key(), |_| ttl), Cached::Fresh(Arc::new(1)));

        tokio::time::advance(ttl).await;
        let stale = |refresh| Cached::Stale {
            value: Arc::new(1),
            refresh,
        };
        assert_eq!(peek(&map, &key(), |_| ttl), stale(true));
        assert_eq!(
            peek(&map, &key(), |_| ttl),
            stale(false),
            "one refresh at a time"
        );

        // The refresh replaces the cell; the old value is served until it lands.
        let refreshing = cell(&map, key(), |_| ttl);
        assert!(!Arc::ptr_eq(&c, &refreshing));
        assert_eq!(peek(&map, &key(), |_| ttl), stale(false));
        tokio::time::advance(REFRESH_RETRY).await;
        assert_eq!(
            peek(&map, &key(), |_| ttl),
            stale(true),
            "a failed refresh is retried later"
        );
        refreshing.set((Instant::now(), Arc::new(2))).expect("set");
        assert_eq!(peek(&map, &key(), |_| ttl), Cached::Fresh(Arc::new(2)));
    }
}
