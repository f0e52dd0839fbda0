//! The fake project's catalog: zones (one of them `DOWN`, which the region picker must
//! skip) and machine types per zone (one deprecated), shaped like the Compute API.
use serde_json::{Value, json};

/// (zone, region, status).
pub(crate) const ZONES: [(&str, &str, &str); 4] = [
    ("us-central1-a", "us-central1", "UP"),
    ("us-central1-b", "us-central1", "UP"),
    ("europe-west1-b", "europe-west1", "UP"),
    ("us-east1-c", "us-east1", "DOWN"),
];

/// (name, vCPUs, memory MB, deprecated state).
pub(crate) const MACHINE_TYPES: [(&str, u32, u32, Option<&str>); 6] = [
    ("e2-micro", 2, 1024, None),
    ("t2a-standard-1", 1, 4096, None),
    ("e2-small", 2, 2048, None),
    ("e2-medium", 2, 4096, None),
    ("n1-standard-1", 1, 3840, Some("DEPRECATED")),
    ("n2-standard-2", 2, 8192, None),
];

/// Whether `zone` exists.
pub(crate) fn zone_exists(zone: &str) -> bool {
    ZONES.iter().any(|(z, _, _)| *z == zone)
}

/// Whether `zone` is named in `full`, itself or through its region.
pub(crate) fn zone_is_full(full: &[String], zone: &str) -> bool {
    let region = ZONES
        .iter()
        .find(|(z, _, _)| *z == zone)
        .map(|(_, r, _)| *r);
    full.iter()
        .any(|f| f == zone || region.is_some_and(|r| r == f))
}

/// Whether `machine_type` exists.
pub(crate) fn machine_type_exists(machine_type: &str) -> bool {
    MACHINE_TYPES.iter().any(|(m, _, _, _)| *m == machine_type)
}

/// Every zone, rendered.
pub(crate) fn zones(base: &str, project: &str) -> Vec<Value> {
    ZONES
        .iter()
        .enumerate()
        .map(|(i, (zone, region, status))| json!({
            "kind": "compute#zone", "id": format!("{}", 2000 + i), "name": zone, "status": status,
            "description": zone, "region": format!("{base}/projects/{project}/regions/{region}"),
            "selfLink": format!("{base}/projects/{project}/zones/{zone}"), "availableCpuPlatforms": ["Intel Cascade Lake"],
        }))
        .collect()
}

/// The machine types of `zone`, rendered.
pub(crate) fn machine_types(base: &str, project: &str, zone: &str) -> Vec<Value> {
    MACHINE_TYPES
        .iter()
        .enumerate()
        .map(|(i, (name, cpus, mem, deprecated))| {
            let mut v = json!({
                "kind": "compute#machineType", "id": format!("{}", 3000 + i), "name": name,
                "description": format!("{cpus} vCPU, {} GB RAM", mem / 1024), "guestCpus": cpus, "memoryMb": mem,
                "maximumPersistentDisks": 128, "maximumPersistentDisksSizeGb": "263168", "zone": zone, "isSharedCpu": name.starts_with("e2-m") || name.ends_with("small"),
                "selfLink": format!("{base}/projects/{project}/zones/{zone}/machineTypes/{name}"),
                "architecture": if name.starts_with("t2a-") { "ARM64" } else { "X86_64" },
            });
            if let Some(state) = deprecated {
                v["deprecated"] = json!({ "state": state, "replacement": format!("{base}/projects/{project}/zones/{zone}/machineTypes/n2-standard-2") });
            }
            v
        })
        .collect()
}
