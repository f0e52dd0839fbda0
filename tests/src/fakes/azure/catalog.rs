//! The fake subscription's catalog: a few physical locations, a logical one (which the
//! region picker must skip), and VM sizes per location, shaped like ARM's answers.
use serde_json::{Value, json};

/// (name, display name, region type).
pub(crate) const LOCATIONS: [(&str, &str, &str); 4] = [
    ("westeurope", "West Europe", "Physical"),
    ("northeurope", "North Europe", "Physical"),
    ("eastus", "East US", "Physical"),
    ("europe", "Europe", "Logical"),
];

/// (name, cores, memory MB, locations where sold).
pub(crate) const SIZES: [(&str, u32, u32, &[&str]); 5] = [
    (
        "Standard_B1s",
        1,
        1024,
        &["westeurope", "northeurope", "eastus"],
    ),
    (
        "Standard_B2s",
        2,
        4096,
        &["westeurope", "northeurope", "eastus"],
    ),
    ("Standard_D2s_v5", 2, 8192, &["westeurope", "eastus"]),
    ("Standard_D4s_v5", 4, 16384, &["eastus"]),
    // An Ampere Altra (Arm) size: the `p` after the vCPU count.
    ("Standard_D2ps_v5", 2, 8192, &["westeurope", "eastus"]),
];

/// Whether `name` is a physical location.
pub(crate) fn is_physical(name: &str) -> bool {
    LOCATIONS
        .iter()
        .any(|(n, _, t)| *n == name && *t == "Physical")
}

/// Whether `size` is sold in `location`.
pub(crate) fn sold(size: &str, location: &str) -> bool {
    SIZES
        .iter()
        .any(|(n, _, _, at)| *n == size && at.contains(&location))
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

/// `GET …/locations/{location}/vmSizes`.
pub(crate) fn sizes(location: &str) -> Value {
    let value: Vec<Value> = SIZES
        .iter()
        .filter(|(_, _, _, at)| at.contains(&location))
        .map(|(name, cores, mem, _)| json!({
            "name": name, "numberOfCores": cores, "osDiskSizeInMB": 1_047_552, "resourceDiskSizeInMB": 4096 * cores,
            "memoryInMB": mem, "maxDataDiskCount": 2 * cores
        }))
        .collect();
    json!({ "value": value })
}
