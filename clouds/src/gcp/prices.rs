//! Machine-type prices composed from the Cloud Billing Catalog API
//! (`services/6F81-5844-456A/skus`, Compute Engine, every page): GCP publishes no price per
//! machine type, only per vCPU hour and per GiB hour of each machine family, by region. A
//! machine type's month is `730 h × (vCPUs × core rate + GiB × RAM rate)` of its family's
//! `OnDemand` SKUs serving the zone's region (`serviceRegions`), so it is an estimate.
//! The SKUs are told apart by their description (`E2 Instance Core running in …`, `N1
//! Predefined Instance Ram running in …`): custom, sole-tenant, committed and preemptible
//! SKUs never match. Shared-core E2 types are billed for a fraction of their vCPUs;
//! `f1-micro` and `g1-small` have a price of their own per instance, not composed here.
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use serde::Deserialize;

use crate::http::ApiClient;
use crate::pricing::{Pages, Price, PriceList, decimal};
use crate::ratelimit::{Bucket, RateLimiter};
use crate::{ProviderError, ProviderId, Size};

/// The Cloud Billing API's own rate budget, shared by every client of the process (its
/// pauses never hold Compute's calls).
pub(super) static LIMITER: LazyLock<Arc<RateLimiter>> = LazyLock::new(|| {
    Arc::new(RateLimiter::new(&[Bucket {
        capacity: 10.0,
        refill_per_sec: 2.0,
    }]))
});

/// The public Cloud Billing API.
pub const DEFAULT_BILLING_URL: &str = "https://cloudbilling.googleapis.com";

/// The Compute Engine service of the catalog.
const COMPUTE_SERVICE: &str = "services/6F81-5844-456A";

/// The largest page the catalog answers.
const PAGE_SIZE: u32 = 5000;

/// What names the price list in a size's "price unavailable" reason.
pub(super) const WHAT: &str = "the Cloud Billing Catalog (Compute Engine SKUs)";

/// Machine families whose on-demand vCPUs and memory are priced per unit: the family
/// (the machine type's prefix) and how its SKUs' descriptions begin.
const FAMILIES: [(&str, &str); 8] = [
    ("e2", "E2 Instance"),
    ("n2", "N2 Instance"),
    ("n2d", "N2D AMD Instance"),
    ("n1", "N1 Predefined Instance"),
    ("c2", "Compute optimized"),
    ("c3", "C3 Instance"),
    ("t2d", "T2D AMD Instance"),
    ("t2a", "T2A Arm Instance"),
];

/// The vCPUs a shared-core E2 type is billed for (its `guestCpus` says 2).
const SHARED_CORE: [(&str, f64); 3] = [("e2-micro", 0.25), ("e2-small", 0.5), ("e2-medium", 1.0)];

/// The on-demand rates of one region (in billionths of `currency` an hour), by family.
#[derive(Debug, Default)]
pub(super) struct Rates {
    region: String,
    currency: String,
    core: BTreeMap<&'static str, i128>,
    ram: BTreeMap<&'static str, i128>,
}

/// The on-demand per-vCPU and per-GiB hourly rates of every family in `region`.
pub(super) async fn rates(billing: &ApiClient, region: &str) -> Result<Rates, ProviderError> {
    let mut rates = Rates {
        region: region.to_owned(),
        ..Rates::default()
    };
    let mut token = String::new();
    let mut pages = Pages::default();
    loop {
        let mut path = format!("v1/{COMPUTE_SERVICE}/skus?currencyCode=USD&pageSize={PAGE_SIZE}");
        if !token.is_empty() {
            path.push_str("&pageToken=");
            path.push_str(&super::client::encode(&token));
        }
        let page: Page = billing.get_json(&path).await?;
        for sku in page.skus.iter().filter(|s| s.serves(region)) {
            if let Some(rate) = sku.hourly() {
                rates.add(sku, rate);
            }
        }
        match pages.next(ProviderId::Gcp, page.next_page_token.as_deref())? {
            Some(t) => token = t,
            None => return Ok(rates),
        }
    }
}

impl Rates {
    fn add(&mut self, sku: &Sku, (rate, currency): (i128, &str)) {
        for (family, prefix) in FAMILIES {
            let Some(rest) = sku.description.strip_prefix(prefix) else {
                continue;
            };
            let into = if rest.starts_with(" Core running in ") {
                &mut self.core
            } else if rest.starts_with(" Ram running in ") {
                &mut self.ram
            } else {
                continue;
            };
            into.entry(family).or_insert(rate);
            if self.currency.is_empty() {
                currency.clone_into(&mut self.currency);
            }
        }
    }

    /// Every size's composed price in `zone`, or why it has none.
    pub(super) fn compose(&self, sizes: &[Size], zone: &str) -> PriceList {
        sizes
            .iter()
            .map(|size| (size.id.clone(), self.price(size, zone)))
            .collect()
    }

    fn price(&self, size: &Size, zone: &str) -> Result<Price, String> {
        let family = size.id.split('-').next().unwrap_or_default();
        if !FAMILIES.iter().any(|(f, _)| *f == family) {
            return Err(format!(
                "Levelrail composes no price for the {family} machine family (see Google \
                 Cloud's pricing for {})",
                size.id
            ));
        }
        let (Some(core), Some(ram)) = (self.core.get(family), self.ram.get(family)) else {
            return Err(format!(
                "{WHAT} lists no on-demand {} rates for {} (zone {zone})",
                family.to_uppercase(),
                self.region
            ));
        };
        let vcpus = SHARED_CORE
            .iter()
            .find(|(id, _)| *id == size.id)
            .map_or(f64::from(size.vcpus), |(_, billed)| *billed);
        let gib = f64::from(size.memory_mb) / 1024.0;
        let per_hour = (vcpus * *core as f64 + gib * *ram as f64).round() as i128;
        let rate = |nanos: i128| decimal(nanos as f64 / 1e9);
        Ok(Price::composed(
            per_hour,
            &self.currency,
            &format!(
                "{} vCPU × {} + {} GiB × {}",
                decimal(vcpus),
                rate(*core),
                decimal(gib),
                rate(*ram)
            ),
        ))
    }
}

/// The zone's region: `us-central1-a` → `us-central1`.
pub(super) fn region_of(zone: &str) -> &str {
    zone.rsplit_once('-').map_or(zone, |(region, _)| region)
}

/// A page of `services.skus.list`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    #[serde(default)]
    skus: Vec<Sku>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sku {
    #[serde(default)]
    description: String,
    #[serde(default)]
    category: Category,
    #[serde(default)]
    service_regions: Vec<String>,
    #[serde(default)]
    pricing_info: Vec<PricingInfo>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Category {
    #[serde(default)]
    resource_family: String,
    #[serde(default)]
    usage_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PricingInfo {
    pricing_expression: PricingExpression,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PricingExpression {
    #[serde(default)]
    usage_unit: String,
    #[serde(default)]
    tiered_rates: Vec<TierRate>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TierRate {
    #[serde(default)]
    start_usage_amount: f64,
    unit_price: Money,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Money {
    currency_code: String,
    #[serde(default)]
    units: String,
    #[serde(default)]
    nanos: i64,
}

impl Sku {
    /// An on-demand Compute SKU serving `region`.
    fn serves(&self, region: &str) -> bool {
        self.category.resource_family == "Compute"
            && self.category.usage_type == "OnDemand"
            && self.service_regions.iter().any(|r| r == region)
    }

    /// The hourly rate of the current price (the last `pricingInfo`), first tier, per hour
    /// (`h`) or GiB hour (`GiBy.h`), with its currency.
    fn hourly(&self) -> Option<(i128, &str)> {
        let expression = &self.pricing_info.last()?.pricing_expression;
        if !matches!(expression.usage_unit.as_str(), "h" | "GiBy.h") {
            return None;
        }
        let tier = expression
            .tiered_rates
            .iter()
            .find(|t| t.start_usage_amount == 0.0)?;
        let money = &tier.unit_price;
        let units = money.units.trim();
        let units: i128 = if units.is_empty() {
            0
        } else {
            units.parse().ok()?
        };
        let rate = units * 1_000_000_000 + i128::from(money.nanos);
        (rate > 0).then_some((rate, money.currency_code.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pricing;
    use levelrail_types::CpuArch;

    fn sku(description: &str, usage: &str, regions: &[&str], unit: &str, nanos: i64) -> Sku {
        serde_json::from_value(serde_json::json!({
            "description": description,
            "category": { "resourceFamily": "Compute", "resourceGroup": "CPU", "usageType": usage },
            "serviceRegions": regions,
            "pricingInfo": [{ "pricingExpression": { "usageUnit": unit, "tieredRates": [
                { "startUsageAmount": 0, "unitPrice": { "currencyCode": "USD", "units": "0", "nanos": nanos } }
            ] } }]
        }))
        .expect("a SKU")
    }

    fn size(id: &str, vcpus: u32, memory_mb: u32) -> Size {
        Size {
            id: id.into(),
            name: id.into(),
            vcpus,
            memory_mb,
            disk_gb: 0,
            pricing: Pricing::Unread,
            architecture: CpuArch::X86_64,
            unavailable_reason: None,
        }
    }

    fn rates(skus: &[Sku]) -> Rates {
        let mut rates = Rates {
            region: "us-central1".into(),
            ..Rates::default()
        };
        for s in skus.iter().filter(|s| s.serves("us-central1")) {
            if let Some(rate) = s.hourly() {
                rates.add(s, rate);
            }
        }
        rates
    }

    #[test]
    fn a_machine_type_is_its_familys_vcpus_and_memory_at_the_regions_rates() {
        let americas = ["us-central1", "us-east1", "us-west1"];
        let rates = rates(&[
            sku(
                "E2 Instance Core running in Americas",
                "OnDemand",
                &americas,
                "h",
                21_811_590,
            ),
            sku(
                "E2 Instance Ram running in Americas",
                "OnDemand",
                &americas,
                "GiBy.h",
                2_923_530,
            ),
            // Look-alikes that are not the on-demand rates of the region.
            sku(
                "E2 Custom Instance Core running in Americas",
                "OnDemand",
                &americas,
                "h",
                99_000_000,
            ),
            sku(
                "Spot Preemptible E2 Instance Core running in Americas",
                "Preemptible",
                &americas,
                "h",
                1,
            ),
            sku(
                "Commitment v1: E2 Cpu in Americas for 1 Year",
                "Commit1Yr",
                &americas,
                "h",
                1,
            ),
            sku(
                "E2 Instance Core running in Belgium",
                "OnDemand",
                &["europe-west1"],
                "h",
                1,
            ),
            // N1 has only its core rate here: not composed.
            sku(
                "N1 Predefined Instance Core running in Americas",
                "OnDemand",
                &americas,
                "h",
                31_611_000,
            ),
        ]);
        let prices = rates.compose(
            &[
                size("e2-standard-2", 2, 8192),
                size("e2-micro", 2, 1024),
                size("n1-standard-1", 1, 3840),
                size("f1-micro", 1, 614),
            ],
            "us-central1-a",
        );
        let price = |id: &str| prices[id].clone().expect("a price");
        let standard = price("e2-standard-2");
        // 2 × 0.02181159 + 8 × 0.00292353 = 0.06701142 USD/h.
        assert_eq!(
            (
                standard.monthly.as_str(),
                standard.currency.as_str(),
                standard.estimate
            ),
            ("48.92", "USD", true)
        );
        assert_eq!(
            standard.basis,
            "730 h × (2 vCPU × 0.021812 + 8 GiB × 0.002924 USD/h)"
        );
        // Billed for a quarter of a vCPU.
        assert!(
            price("e2-micro").basis.contains("0.25 vCPU"),
            "{:?}",
            prices["e2-micro"]
        );
        assert_eq!(
            prices["n1-standard-1"],
            Err(format!(
                "{WHAT} lists no on-demand N1 rates for us-central1 (zone us-central1-a)"
            )),
            "no RAM rate"
        );
        assert!(
            prices["f1-micro"]
                .as_ref()
                .is_err_and(|why| why.contains("no price for the f1 machine family")),
            "{:?}",
            prices["f1-micro"]
        );
    }

    #[test]
    fn zones_name_their_region() {
        assert_eq!(region_of("us-central1-a"), "us-central1");
        assert_eq!(region_of("europe-west1-b"), "europe-west1");
    }
}
