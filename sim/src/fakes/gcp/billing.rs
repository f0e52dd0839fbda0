//! The Cloud Billing Catalog API (`GET /v1/services/{service}/skus`, the
//! `cloudbilling.services.skus.list` method of `gcp-cloudbilling.v1.discovery.json`), as
//! Google answers it for Compute Engine (`6F81-5844-456A`): `Sku` objects with their
//! `category` (`resourceFamily`, `resourceGroup`, `usageType`), `serviceRegions`,
//! `pricingInfo` (`pricingExpression` with `usageUnit` `h` or `GiBy.h`, `tieredRates` of
//! `Money` in `units` and `nanos`) and `geoTaxonomy`; `pageSize` (default and most 5000)
//! and an opaque `nextPageToken`. An OAuth token Compute accepts is required, granted a
//! Cloud Billing scope (`cloud-billing`, `cloud-billing.readonly` or `cloud-platform`;
//! `compute` alone is refused with `ACCESS_TOKEN_SCOPE_INSUFFICIENT`). Besides the
//! per-vCPU and per-GiB on-demand rates of the families the catalog sells, the answer holds
//! what a real one holds near them: custom-machine, preemptible and committed-use rates,
//! a licence fee and network egress. `currencyCode` USD or EUR; `startTime` / `endTime`
//! (historical prices) and other currencies are refused as invalid by the fake.
use serde_json::{Value, json};

use super::Shared;
use super::auth::{billing_scope, compute_access};
use super::state::error;
use crate::fakes::edge::{Call, Reply};

/// Compute Engine's service id in the catalog.
pub(crate) const COMPUTE_SERVICE: &str = "6F81-5844-456A";

/// The largest page (and the default).
const MAX_PAGE: usize = 5000;

/// Currencies the fake converts to, with their rate to a US dollar.
const CURRENCIES: [(&str, f64); 2] = [("USD", 1.0), ("EUR", 0.92)];

/// Regions sharing the "Americas" SKUs.
const AMERICAS: &[&str] = &["us-central1", "us-east1", "us-west1"];
const BELGIUM: &[&str] = &["europe-west1"];

/// (description, resourceGroup, usageType, unit, regions, USD nanos per unit).
type SkuSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    i64,
);

/// The catalog's SKUs, in the order Google lists them (by id, not by meaning).
const SKUS: [SkuSpec; 17] = [
    (
        "E2 Instance Core running in Americas",
        "CPU",
        "OnDemand",
        "h",
        AMERICAS,
        21_811_590,
    ),
    (
        "E2 Instance Ram running in Americas",
        "RAM",
        "OnDemand",
        "GiBy.h",
        AMERICAS,
        2_923_530,
    ),
    (
        "E2 Instance Core running in Belgium",
        "CPU",
        "OnDemand",
        "h",
        BELGIUM,
        23_881_000,
    ),
    (
        "E2 Instance Ram running in Belgium",
        "RAM",
        "OnDemand",
        "GiBy.h",
        BELGIUM,
        3_200_900,
    ),
    (
        "E2 Custom Instance Core running in Americas",
        "CPU",
        "OnDemand",
        "h",
        AMERICAS,
        22_902_000,
    ),
    (
        "Spot Preemptible E2 Instance Core running in Americas",
        "CPU",
        "Preemptible",
        "h",
        AMERICAS,
        6_543_000,
    ),
    (
        "Commitment v1: E2 Cpu in Americas for 1 Year",
        "CPU",
        "Commit1Yr",
        "h",
        AMERICAS,
        13_741_000,
    ),
    (
        "N2 Instance Core running in Americas",
        "CPU",
        "OnDemand",
        "h",
        AMERICAS,
        31_611_000,
    ),
    (
        "N2 Instance Ram running in Americas",
        "RAM",
        "OnDemand",
        "GiBy.h",
        AMERICAS,
        4_237_000,
    ),
    (
        "N2 Instance Core running in Belgium",
        "CPU",
        "OnDemand",
        "h",
        BELGIUM,
        34_773_000,
    ),
    (
        "N2 Instance Ram running in Belgium",
        "RAM",
        "OnDemand",
        "GiBy.h",
        BELGIUM,
        4_661_000,
    ),
    (
        "N1 Predefined Instance Core running in Americas",
        "N1Standard",
        "OnDemand",
        "h",
        AMERICAS,
        31_611_000,
    ),
    (
        "N1 Predefined Instance Ram running in Americas",
        "N1Standard",
        "OnDemand",
        "GiBy.h",
        AMERICAS,
        4_237_000,
    ),
    // T2A (Arm) is sold in the Americas only here.
    (
        "T2A Arm Instance Core running in Americas",
        "CPU",
        "OnDemand",
        "h",
        AMERICAS,
        30_800_000,
    ),
    (
        "T2A Arm Instance Ram running in Americas",
        "RAM",
        "OnDemand",
        "GiBy.h",
        AMERICAS,
        3_080_000,
    ),
    (
        "Licensing Fee for Ubuntu Pro on VM with 2 VCPU",
        "Ubuntu",
        "OnDemand",
        "h",
        AMERICAS,
        4_000_000,
    ),
    (
        "Network Internet Egress from Americas to Americas",
        "PremiumInternetEgress",
        "OnDemand",
        "GiBy",
        AMERICAS,
        120_000_000,
    ),
];

/// `GET /v1/services/{service}/skus`.
pub(crate) fn list_skus(shared: &Shared, call: &Call, service: &str) -> Reply {
    if call.method != "GET" {
        return Reply::json(405, error(405, "methodNotAllowed", "Method Not Allowed"));
    }
    if let Err(refused) = compute_access(shared, call) {
        return refused;
    }
    if !billing_scope(shared, call) {
        return Reply::json(
            403,
            error(
                403,
                "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                "Request had insufficient authentication scopes.",
            ),
        );
    }
    if service != COMPUTE_SERVICE {
        return Reply::json(
            404,
            error(404, "notFound", &format!("Service {service} not found.")),
        );
    }
    if call.param("startTime").is_some() || call.param("endTime").is_some() {
        return invalid("startTime / endTime (historical prices) are not served by this fake");
    }
    let currency = call.param("currencyCode").unwrap_or("USD");
    let Some(&(_, rate)) = CURRENCIES.iter().find(|(c, _)| *c == currency) else {
        return invalid(&format!(
            "Currency code {currency} is not supported by this fake."
        ));
    };
    let page_size = match call.param("pageSize").map(str::parse::<usize>) {
        None | Some(Ok(0)) => MAX_PAGE,
        Some(Ok(n)) => n.min(MAX_PAGE),
        Some(Err(_)) => return invalid("Invalid value at 'page_size' (TYPE_INT32)"),
    };
    let page_size = page_size.min(shared.cfg.sku_page_size.max(1));
    let start = match call.param("pageToken") {
        None | Some("") => 0,
        Some(token) => match token.strip_prefix("skus~").and_then(|n| n.parse().ok()) {
            Some(n) => n,
            None => return invalid("Invalid page token."),
        },
    };
    let all: Vec<Value> = SKUS
        .iter()
        .enumerate()
        .map(|s| sku(s, currency, rate))
        .collect();
    let page: Vec<Value> = all.iter().skip(start).take(page_size).cloned().collect();
    let end = start + page.len();
    let mut body = json!({ "skus": page });
    if end < all.len() {
        body["nextPageToken"] = json!(format!("skus~{end}"));
    }
    Reply::json(200, body)
}

fn invalid(message: &str) -> Reply {
    Reply::json(400, error(400, "badRequest", message))
}

/// One SKU, rendered, its price in `currency` (`rate` of it to a US dollar).
fn sku(
    (n, (description, group, usage, unit, regions, nanos)): (usize, &SkuSpec),
    currency: &str,
    rate: f64,
) -> Value {
    let total = (*nanos as f64 * rate).round() as i64;
    let (units, nanos) = (total / 1_000_000_000, total % 1_000_000_000);
    let id = format!(
        "{:04X}-{:04X}-{:04X}",
        0x1A2B + n,
        0x3C4D + 7 * n,
        0x5E6F + 13 * n
    );
    let family = match *group {
        "Ubuntu" => "License",
        "PremiumInternetEgress" => "Network",
        _ => "Compute",
    };
    let (unit_description, base_unit, base_description, factor) = match *unit {
        "h" => ("hour", "s", "second", 3600.0),
        "GiBy.h" => ("gibibyte hour", "By.s", "byte second", 3_865_470_566_400.0),
        _ => ("gibibyte", "By", "byte", 1_073_741_824.0),
    };
    json!({
        "name": format!("services/{COMPUTE_SERVICE}/skus/{id}"),
        "skuId": id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine", "resourceFamily": family,
            "resourceGroup": group, "usageType": usage,
        },
        "serviceRegions": regions,
        "pricingInfo": [{
            "summary": "",
            "pricingExpression": {
                "usageUnit": unit, "displayQuantity": 1, "usageUnitDescription": unit_description,
                "baseUnit": base_unit, "baseUnitDescription": base_description,
                "baseUnitConversionFactor": factor,
                "tieredRates": [{ "startUsageAmount": 0, "unitPrice": { "currencyCode": currency, "units": units.to_string(), "nanos": nanos } }],
            },
            "currencyConversionRate": rate,
            "effectiveTime": "2026-11-01T08:00:00.000Z",
        }],
        "serviceProviderName": "Google",
        "geoTaxonomy": {
            "type": if regions.len() > 1 { "MULTI_REGIONAL" } else { "REGIONAL" },
            "regions": regions,
        },
    })
}
