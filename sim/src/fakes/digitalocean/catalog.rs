//! The fake's catalog (regions, sizes with USD prices and the regions that offer them, the
//! public images) and DigitalOcean's paging: `page` / `per_page` (capped), `meta.total` and
//! absolute `links.pages` URLs carrying the other query parameters along.
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::state::{Shared, json};

/// (slug, name, available).
const REGIONS: [(&str, &str, bool); 12] = [
    ("nyc1", "New York 1", true),
    ("nyc2", "New York 2", false),
    ("nyc3", "New York 3", true),
    ("sfo2", "San Francisco 2", true),
    ("sfo3", "San Francisco 3", true),
    ("ams3", "Amsterdam 3", true),
    ("fra1", "Frankfurt 1", true),
    ("lon1", "London 1", true),
    ("sgp1", "Singapore 1", true),
    ("tor1", "Toronto 1", true),
    ("blr1", "Bangalore 1", true),
    ("syd1", "Sydney 1", true),
];

const EVERYWHERE: &[&str] = &[
    "nyc1", "nyc3", "sfo2", "sfo3", "ams3", "fra1", "lon1", "sgp1", "tor1", "blr1", "syd1",
];

/// A droplet size.
pub(super) struct SizeSpec {
    pub(super) slug: &'static str,
    pub(super) memory: u32,
    pub(super) vcpus: u32,
    pub(super) disk: u32,
    transfer: f64,
    price_monthly: f64,
    price_hourly: f64,
    description: &'static str,
    pub(super) available: bool,
    pub(super) regions: &'static [&'static str],
}

const fn size(
    slug: &'static str,
    (memory, vcpus, disk): (u32, u32, u32),
    (transfer, price_monthly, price_hourly): (f64, f64, f64),
    description: &'static str,
    available: bool,
    regions: &'static [&'static str],
) -> SizeSpec {
    SizeSpec {
        slug,
        memory,
        vcpus,
        disk,
        transfer,
        price_monthly,
        price_hourly,
        description,
        available,
        regions,
    }
}

/// Sizes in DigitalOcean's order (by price). Some exist only in a few regions, one is no
/// longer available anywhere.
pub(super) const SIZES: [SizeSpec; 10] = [
    size(
        "s-1vcpu-512mb-10gb",
        (512, 1, 10),
        (0.5, 4.0, 0.00595),
        "Basic",
        true,
        &["nyc1", "sfo3", "ams3", "fra1", "sgp1", "blr1", "syd1"],
    ),
    size(
        "s-1vcpu-1gb",
        (1024, 1, 25),
        (1.0, 6.0, 0.00893),
        "Basic",
        true,
        EVERYWHERE,
    ),
    size(
        "s-1vcpu-2gb",
        (2048, 1, 50),
        (2.0, 12.0, 0.01786),
        "Basic",
        true,
        EVERYWHERE,
    ),
    size(
        "s-1vcpu-3gb",
        (3072, 1, 60),
        (3.0, 15.0, 0.02232),
        "Basic",
        false,
        &[],
    ),
    size(
        "s-2vcpu-2gb",
        (2048, 2, 60),
        (3.0, 18.0, 0.02679),
        "Basic",
        true,
        EVERYWHERE,
    ),
    size(
        "s-2vcpu-4gb",
        (4096, 2, 80),
        (4.0, 24.0, 0.03571),
        "Basic",
        true,
        EVERYWHERE,
    ),
    size(
        "c-2",
        (4096, 2, 25),
        (4.0, 42.0, 0.0625),
        "CPU-Optimized",
        true,
        &["nyc1", "nyc3", "sfo3", "ams3", "fra1", "lon1", "tor1"],
    ),
    size(
        "s-4vcpu-8gb",
        (8192, 4, 160),
        (5.0, 48.0, 0.07143),
        "Basic",
        true,
        EVERYWHERE,
    ),
    size(
        "g-2vcpu-8gb",
        (8192, 2, 25),
        (4.0, 63.0, 0.09375),
        "General Purpose",
        true,
        &["nyc1", "nyc3", "sfo3", "fra1", "lon1", "tor1"],
    ),
    size(
        "m-2vcpu-16gb",
        (16384, 2, 50),
        (4.0, 84.0, 0.125),
        "Memory-Optimized",
        true,
        &["nyc3", "sfo3", "ams3", "fra1"],
    ),
];

/// (slug, image id, name, distribution) of the public images the fake offers.
pub(super) const IMAGES: [(&str, u64, &str, &str); 3] = [
    ("ubuntu-24-04-x64", 160_232_537, "24.04 (LTS) x64", "Ubuntu"),
    ("ubuntu-22-04-x64", 129_211_873, "22.04 (LTS) x64", "Ubuntu"),
    ("debian-12-x64", 162_612_214, "12 x64", "Debian"),
];

pub(super) fn find_size(slug: &str) -> Option<&'static SizeSpec> {
    SIZES.iter().find(|s| s.slug == slug)
}

/// Whether `slug` names a region where droplets can be created.
pub(super) fn region_available(slug: &str) -> bool {
    REGIONS
        .iter()
        .any(|(s, _, available)| *s == slug && *available)
}

/// The `region` object.
pub(super) fn region_json(slug: &str) -> Value {
    let (slug, name, available) = REGIONS
        .iter()
        .find(|(s, ..)| *s == slug)
        .copied()
        .unwrap_or((REGIONS[0].0, REGIONS[0].1, true));
    let sizes: Vec<&str> = if available {
        SIZES
            .iter()
            .filter(|s| s.available && s.regions.contains(&slug))
            .map(|s| s.slug)
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "name": name,
        "slug": slug,
        "features": ["backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"],
        "available": available,
        "sizes": sizes,
    })
}

/// The `size` object.
pub(super) fn size_json(s: &SizeSpec) -> Value {
    json!({
        "slug": s.slug,
        "memory": s.memory,
        "vcpus": s.vcpus,
        "disk": s.disk,
        "transfer": s.transfer,
        "price_monthly": s.price_monthly,
        "price_hourly": s.price_hourly,
        "regions": s.regions,
        "available": s.available,
        "description": s.description,
        "disk_info": [{ "type": "local", "size": { "amount": s.disk, "unit": "gib" } }],
    })
}

/// The `image` object of a public image slug.
pub(super) fn image_json(slug: &str) -> Option<Value> {
    let (slug, id, name, distribution) = IMAGES.iter().find(|(s, ..)| *s == slug).copied()?;
    Some(json!({
        "id": id,
        "name": name,
        "distribution": distribution,
        "slug": slug,
        "public": true,
        "regions": EVERYWHERE,
        "created_at": "2024-04-25T14:07:34Z",
        "min_disk_size": 7,
        "type": "base",
        "size_gigabytes": 2.36,
        "description": format!("{distribution} {name}"),
        "tags": [],
        "status": "available",
    }))
}

/// GET /v2/regions.
pub(super) async fn list_regions(
    State(shared): State<Arc<Shared>>,
    RawQuery(q): RawQuery,
) -> Response {
    let items = REGIONS.iter().map(|(slug, ..)| region_json(slug)).collect();
    json(
        StatusCode::OK,
        page(&shared, "/v2/regions", "regions", items, q.as_deref()),
    )
}

/// GET /v2/sizes.
pub(super) async fn list_sizes(
    State(shared): State<Arc<Shared>>,
    RawQuery(q): RawQuery,
) -> Response {
    let items = SIZES.iter().map(size_json).collect();
    json(
        StatusCode::OK,
        page(&shared, "/v2/sizes", "sizes", items, q.as_deref()),
    )
}

/// One page of `items` under `key`, with `links.pages` and `meta.total`. Filters other than
/// `page` / `per_page` are repeated in the links.
pub(super) fn page(
    shared: &Shared,
    path: &str,
    key: &str,
    items: Vec<Value>,
    query: Option<&str>,
) -> Value {
    page_of(shared, path, key, items, |v| v, query)
}

/// [`page`] of `items`, of which only the page asked for is turned into JSON by `json`: a
/// walk through every page of a large list costs one JSON encoding per item, not one per
/// item and page.
pub(super) fn page_of<T>(
    shared: &Shared,
    path: &str,
    key: &str,
    items: Vec<T>,
    json: impl FnMut(T) -> Value,
    query: Option<&str>,
) -> Value {
    let params = super::state::query_pairs(query);
    let number = |k: &str, default: usize| {
        params
            .get(k)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let per_page = number("per_page", 20).clamp(1, shared.page_size_cap.max(1));
    let total = items.len();
    let last = total.div_ceil(per_page).max(1);
    let current = number("page", 1).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((current - 1) * per_page)
        .take(per_page)
        .map(json)
        .collect();
    let filters: BTreeMap<&String, &String> = params
        .iter()
        .filter(|(k, _)| *k != "page" && *k != "per_page")
        .collect();
    let link = |n: usize| {
        let mut url = format!("{}{path}?page={n}&per_page={per_page}", shared.origin);
        for (k, v) in &filters {
            url.push_str(&format!("&{k}={v}"));
        }
        url
    };
    let mut pages = serde_json::Map::new();
    if current > 1 {
        pages.insert("first".into(), link(1).into());
        pages.insert("prev".into(), link(current - 1).into());
    }
    if current < last {
        pages.insert("next".into(), link(current + 1).into());
        pages.insert("last".into(), link(last).into());
    }
    let links = if pages.is_empty() {
        json!({})
    } else {
        json!({ "pages": pages })
    };
    json!({ key: slice, "links": links, "meta": { "total": total } })
}
