//! Resource SKUs of the fake (`GET /subscriptions/{sub}/providers/Microsoft.Compute/skus`,
//! api-version 2017-03-30, 2019-04-01 or 2021-07-01), shaped like the 2021-07-01 example
//! `ListAvailableResourceSkusForARegion`: one `virtualMachines` entry per size with its
//! capabilities (`vCPUs`, `MemoryGB`, `HyperVGenerations`, `CpuArchitectureType`, …),
//! `locationInfo` with zones, and `restrictions` (`Location` / `Zone` with a reason code).
//! `$filter=location eq '…'` is the only filter ARM takes; the list is paged by `nextLink`
//! with the configured page size. The subscription-scope read `Microsoft.Compute/skus/read`
//! is enforced like every other.
use serde_json::{Value, json};

use super::catalog::{SIZES, SizeSpec};
use super::state::error;
use super::wire::page_of;
use super::{Shared, roles};
use crate::fakes::edge::{Call, Reply};

/// The api-versions of the Resource SKUs API.
const API_VERSIONS: [&str; 3] = ["2017-03-30", "2019-04-01", "2021-07-01"];
/// The action ARM checks.
pub(crate) const ACTION: &str = "Microsoft.Compute/skus/read";

/// `GET …/providers/Microsoft.Compute/skus`.
pub(crate) fn list(shared: &Shared, call: &Call) -> Reply {
    if !call
        .param("api-version")
        .is_some_and(|v| API_VERSIONS.contains(&v))
    {
        return Reply::json(
            400,
            error(
                "InvalidApiVersionParameter",
                "The api-version is invalid for Microsoft.Compute/skus.",
            ),
        );
    }
    if let Some(refused) = roles::subscription_check(shared, ACTION) {
        return refused;
    }
    let location = match call.param("$filter").map(parse_filter) {
        None => None,
        Some(Some(l)) => Some(l),
        Some(None) => {
            return Reply::json(
                400,
                error(
                    "InvalidFilterInQueryString",
                    "The filter is invalid: only location eq '<location>' is supported.",
                ),
            );
        }
    };
    let all: Vec<_> = SIZES
        .iter()
        .flat_map(|s| s.locations.iter().map(move |l| (s, *l)))
        .filter(|(_, l)| {
            location
                .as_deref()
                .is_none_or(|want| want.eq_ignore_ascii_case(l))
        })
        .collect();
    let (value, next) = page_of(shared, call, all, |(s, l)| render(s, l));
    Reply::json(200, json!({ "value": value, "nextLink": next }))
}

/// `location eq 'westeurope'` → `westeurope` (a location the subscription lacks lists nothing).
fn parse_filter(f: &str) -> Option<String> {
    let rest = f.trim().strip_prefix("location eq '")?;
    let (location, tail) = rest.split_once('\'')?;
    (!location.is_empty() && tail.trim().is_empty()).then(|| location.to_owned())
}

/// The SKU entry of `s` in `location`.
fn render(s: &SizeSpec, location: &str) -> Value {
    let cap = |name: &str, value: String| json!({ "name": name, "value": value });
    let memory_gb = f64::from(s.memory_mb) / 1024.0;
    let capabilities = vec![
        cap("MaxResourceVolumeMB", (4096 * s.cores).to_string()),
        cap("OSVhdSizeMB", "1047552".into()),
        cap("vCPUs", s.cores.to_string()),
        cap("MemoryPreservingMaintenanceSupported", "True".into()),
        cap("HyperVGenerations", s.generations.into()),
        cap("MemoryGB", trim_number(memory_gb)),
        cap("MaxDataDiskCount", (2 * s.cores).to_string()),
        cap("CpuArchitectureType", s.arch.into()),
        cap("LowPriorityCapable", "True".into()),
        // Av2 sizes take Standard disks only.
        cap(
            "PremiumIO",
            if s.family == "standardAv2Family" {
                "False"
            } else {
                "True"
            }
            .into(),
        ),
        cap("vCPUsAvailable", s.cores.to_string()),
        cap("ACUs", if s.cores == 1 { "100" } else { "195" }.into()),
        cap(
            "vCPUsPerCore",
            if s.arch == "Arm64" { "1" } else { "2" }.into(),
        ),
        cap("EphemeralOSDiskSupported", "True".into()),
        cap("AcceleratedNetworkingEnabled", "True".into()),
        cap("RdmaEnabled", "False".into()),
        cap("MaxNetworkInterfaces", "2".into()),
    ];
    let mut restrictions: Vec<Value> = s
        .restriction(location)
        .map(|reason| {
            json!({
                "type": "Location", "values": [location],
                "restrictionInfo": { "locations": [location] },
                "reasonCode": reason
            })
        })
        .into_iter()
        .collect();
    let zones: Vec<&str> = s
        .zone_restricted
        .iter()
        .filter(|(at, _)| *at == location)
        .map(|(_, zone)| *zone)
        .collect();
    if !zones.is_empty() {
        restrictions.push(json!({
            "type": "Zone", "values": [location],
            "restrictionInfo": { "locations": [location], "zones": zones },
            "reasonCode": "NotAvailableForSubscription"
        }));
    }
    json!({
        "resourceType": "virtualMachines",
        "name": s.name,
        "tier": "Standard",
        "size": s.name.trim_start_matches("Standard_"),
        "family": s.family,
        "locations": [location],
        "locationInfo": [{ "location": location, "zones": ["1", "2", "3"], "zoneDetails": [] }],
        "capabilities": capabilities,
        "restrictions": restrictions
    })
}

/// `4`, `0.5`, `1.75`: as ARM writes `MemoryGB`.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
