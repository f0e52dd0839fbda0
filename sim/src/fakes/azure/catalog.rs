//! The fake subscription's catalog: a few physical locations, a logical one (which the
//! region picker must skip), and VM sizes per location with their Hyper-V generations,
//! architecture and the subscription's restrictions, shaped like ARM's answers (Resource
//! SKUs are rendered in `skus`).
use serde_json::{Value, json};

/// (name, display name, region type).
pub(crate) const LOCATIONS: [(&str, &str, &str); 4] = [
    ("westeurope", "West Europe", "Physical"),
    ("northeurope", "North Europe", "Physical"),
    ("eastus", "East US", "Physical"),
    ("europe", "Europe", "Logical"),
];

/// A VM size of the fake's catalog.
#[derive(Debug)]
pub(crate) struct SizeSpec {
    pub(crate) name: &'static str,
    /// The SKU family (`standardBSFamily`, …).
    pub(crate) family: &'static str,
    pub(crate) cores: u32,
    pub(crate) memory_mb: u32,
    /// Where it is sold.
    pub(crate) locations: &'static [&'static str],
    /// `HyperVGenerations`: `V1`, `V2` or `V1,V2`.
    pub(crate) generations: &'static str,
    /// `CpuArchitectureType`: `x64` or `Arm64`.
    pub(crate) arch: &'static str,
    /// Locations where the subscription may not use it, with ARM's reason code.
    pub(crate) restricted: &'static [(&'static str, &'static str)],
    /// (location, zone) pairs where it may not be placed (regional VMs are unaffected).
    pub(crate) zone_restricted: &'static [(&'static str, &'static str)],
}

const EVERYWHERE: &[&str] = &["westeurope", "northeurope", "eastus"];

/// The catalog: current x64 sizes (Gen1 and Gen2), an Ampere Altra (Arm) size, an older
/// Gen1-only size, and sizes the subscription may not use somewhere, as real subscriptions see.
pub(crate) static SIZES: [SizeSpec; 8] = [
    size(
        "Standard_B1s",
        "standardBSFamily",
        1,
        1024,
        EVERYWHERE,
        "V1,V2",
        "x64",
    ),
    size(
        "Standard_B2s",
        "standardBSFamily",
        2,
        4096,
        EVERYWHERE,
        "V1,V2",
        "x64",
    ),
    SizeSpec {
        zone_restricted: &[("westeurope", "3")],
        ..size(
            "Standard_D2s_v5",
            "standardDSv5Family",
            2,
            8192,
            &["westeurope", "eastus"],
            "V1,V2",
            "x64",
        )
    },
    size(
        "Standard_D4s_v5",
        "standardDSv5Family",
        4,
        16384,
        &["eastus"],
        "V1,V2",
        "x64",
    ),
    // The `p` after the vCPU count marks Arm sizes; the SKU says so too.
    size(
        "Standard_D2ps_v5",
        "standardDPSv5Family",
        2,
        8192,
        &["westeurope", "eastus"],
        "V2",
        "Arm64",
    ),
    // Av2 sizes boot Generation 1 images only.
    size(
        "Standard_A1_v2",
        "standardAv2Family",
        1,
        2048,
        EVERYWHERE,
        "V1",
        "x64",
    ),
    SizeSpec {
        restricted: &[("westeurope", "NotAvailableForSubscription")],
        ..size(
            "Standard_E2s_v5",
            "standardESv5Family",
            2,
            16384,
            EVERYWHERE,
            "V1,V2",
            "x64",
        )
    },
    SizeSpec {
        restricted: &[("northeurope", "QuotaId")],
        ..size(
            "Standard_F2s_v2",
            "standardFSv2Family",
            2,
            4096,
            EVERYWHERE,
            "V1,V2",
            "x64",
        )
    },
];

const fn size(
    name: &'static str,
    family: &'static str,
    cores: u32,
    memory_mb: u32,
    locations: &'static [&'static str],
    generations: &'static str,
    arch: &'static str,
) -> SizeSpec {
    SizeSpec {
        name,
        family,
        cores,
        memory_mb,
        locations,
        generations,
        arch,
        restricted: &[],
        zone_restricted: &[],
    }
}

impl SizeSpec {
    /// Whether it is sold in `location` (restricted or not).
    pub(crate) fn sold_in(&self, location: &str) -> bool {
        self.locations.contains(&location)
    }

    /// ARM's reason code when the subscription may not use it in `location`.
    pub(crate) fn restriction(&self, location: &str) -> Option<&'static str> {
        self.restricted
            .iter()
            .find(|(at, _)| *at == location)
            .map(|(_, reason)| *reason)
    }
}

/// The size named `name`.
pub(crate) fn find(name: &str) -> Option<&'static SizeSpec> {
    SIZES.iter().find(|s| s.name == name)
}

/// Whether `name` is a physical location.
pub(crate) fn is_physical(name: &str) -> bool {
    LOCATIONS
        .iter()
        .any(|(n, _, t)| *n == name && *t == "Physical")
}

/// `GET /subscriptions/{sub}/locations`.
pub(crate) fn locations(subscription: &str) -> Value {
    let value: Vec<Value> = LOCATIONS
        .iter()
        .map(|(name, display, kind)| json!({
            "id": format!("/subscriptions/{subscription}/locations/{name}"),
            "name": name, "type": "Region", "displayName": display, "regionalDisplayName": format!("({}) {display}", if name.contains("us") { "US" } else { "Europe" }),
            "metadata": { "regionType": kind, "regionCategory": if *kind == "Physical" { "Recommended" } else { "Other" }, "geographyGroup": "Europe" }
        }))
        .collect();
    json!({ "value": value })
}

/// `GET …/locations/{location}/vmSizes` (every size sold there, restricted or not, as ARM lists them).
pub(crate) fn sizes(location: &str) -> Value {
    let value: Vec<Value> = SIZES
        .iter()
        .filter(|s| s.sold_in(location))
        .map(|s| json!({
            "name": s.name, "numberOfCores": s.cores, "osDiskSizeInMB": 1_047_552, "resourceDiskSizeInMB": 4096 * s.cores,
            "memoryInMB": s.memory_mb, "maxDataDiskCount": 2 * s.cores
        }))
        .collect();
    json!({ "value": value })
}
