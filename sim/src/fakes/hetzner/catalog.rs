//! The fake Hetzner catalog: locations, server types with per-location prices (US and
//! Singapore cost more, some types are not sold everywhere, one is deprecated everywhere and
//! one only in Helsinki), images and data centers, rendered as the API renders them.
use serde_json::{Value, json};

#[derive(Debug)]
pub(crate) struct Location {
    pub(crate) id: u64,
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) city: &'static str,
    pub(crate) country: &'static str,
    pub(crate) latitude: f64,
    pub(crate) longitude: f64,
    pub(crate) network_zone: &'static str,
}

/// A server type; `prices` are (location, monthly net, monthly gross) in EUR.
#[derive(Debug)]
pub(crate) struct ServerType {
    pub(crate) id: u64,
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) cores: u32,
    pub(crate) memory_gb: f64,
    pub(crate) disk_gb: u64,
    pub(crate) cpu_type: &'static str,
    pub(crate) architecture: &'static str,
    pub(crate) deprecated: bool,
    /// Locations where the type is deprecated (`locations[].deprecation` set).
    pub(crate) deprecated_in: &'static [&'static str],
    pub(crate) prices: &'static [(&'static str, &'static str, &'static str)],
}

/// Every location.
pub(crate) const LOCATIONS: &[Location] = &[
    Location {
        id: 1,
        name: "fsn1",
        description: "Falkenstein DC Park 1",
        city: "Falkenstein",
        country: "DE",
        latitude: 50.47612,
        longitude: 12.370071,
        network_zone: "eu-central",
    },
    Location {
        id: 2,
        name: "nbg1",
        description: "Nuremberg DC Park 1",
        city: "Nuremberg",
        country: "DE",
        latitude: 49.452102,
        longitude: 11.076665,
        network_zone: "eu-central",
    },
    Location {
        id: 3,
        name: "hel1",
        description: "Helsinki DC Park 1",
        city: "Helsinki",
        country: "FI",
        latitude: 60.169855,
        longitude: 24.938379,
        network_zone: "eu-central",
    },
    Location {
        id: 4,
        name: "ash",
        description: "Ashburn, VA",
        city: "Ashburn, VA",
        country: "US",
        latitude: 39.045821,
        longitude: -77.487073,
        network_zone: "us-east",
    },
    Location {
        id: 5,
        name: "hil",
        description: "Hillsboro, OR",
        city: "Hillsboro, OR",
        country: "US",
        latitude: 45.54222,
        longitude: -122.951924,
        network_zone: "us-west",
    },
    Location {
        id: 6,
        name: "sin",
        description: "Singapore",
        city: "Singapore",
        country: "SG",
        latitude: 1.283333,
        longitude: 103.833333,
        network_zone: "ap-southeast",
    },
];

const EU: [&str; 3] = ["fsn1", "nbg1", "hel1"];

/// Every server type.
pub(crate) const SERVER_TYPES: &[ServerType] = &[
    ServerType {
        id: 104,
        name: "cx22",
        description: "CX22",
        cores: 2,
        memory_gb: 4.0,
        disk_gb: 40,
        cpu_type: "shared",
        architecture: "x86",
        deprecated: false,
        deprecated_in: &[],
        prices: &[
            ("fsn1", "3.7900", "4.5101"),
            ("nbg1", "3.7900", "4.5101"),
            ("hel1", "3.7900", "4.5101"),
        ],
    },
    ServerType {
        id: 105,
        name: "cx32",
        description: "CX32",
        cores: 4,
        memory_gb: 8.0,
        disk_gb: 80,
        cpu_type: "shared",
        architecture: "x86",
        deprecated: false,
        deprecated_in: &[],
        prices: &[
            ("fsn1", "6.8000", "8.0920"),
            ("nbg1", "6.8000", "8.0920"),
            ("hel1", "6.8000", "8.0920"),
        ],
    },
    ServerType {
        id: 22,
        name: "cpx11",
        description: "CPX 11",
        cores: 2,
        memory_gb: 2.0,
        disk_gb: 40,
        cpu_type: "shared",
        architecture: "x86",
        deprecated: true,
        deprecated_in: &["fsn1", "nbg1", "hel1", "ash", "hil"],
        prices: &[
            ("fsn1", "4.3500", "5.1765"),
            ("nbg1", "4.3500", "5.1765"),
            ("hel1", "4.3500", "5.1765"),
            ("ash", "5.4900", "6.5331"),
            ("hil", "5.4900", "6.5331"),
        ],
    },
    ServerType {
        id: 23,
        name: "cpx21",
        description: "CPX 21",
        cores: 3,
        memory_gb: 4.0,
        disk_gb: 80,
        cpu_type: "shared",
        architecture: "x86",
        deprecated: false,
        deprecated_in: &["hel1"],
        prices: &[
            ("fsn1", "7.5500", "8.9845"),
            ("nbg1", "7.5500", "8.9845"),
            ("hel1", "7.5500", "8.9845"),
            ("ash", "9.9900", "11.8881"),
            ("hil", "9.9900", "11.8881"),
        ],
    },
    ServerType {
        id: 45,
        name: "cax11",
        description: "CAX11",
        cores: 2,
        memory_gb: 4.0,
        disk_gb: 40,
        cpu_type: "shared",
        architecture: "arm",
        deprecated: false,
        deprecated_in: &[],
        prices: &[
            ("fsn1", "3.7900", "4.5101"),
            ("nbg1", "3.7900", "4.5101"),
            ("hel1", "3.7900", "4.5101"),
        ],
    },
    ServerType {
        id: 96,
        name: "ccx13",
        description: "CCX13 Dedicated CPU",
        cores: 2,
        memory_gb: 8.0,
        disk_gb: 80,
        cpu_type: "dedicated",
        architecture: "x86",
        deprecated: false,
        deprecated_in: &[],
        prices: &[
            ("fsn1", "12.4900", "14.8631"),
            ("nbg1", "12.4900", "14.8631"),
            ("hel1", "12.4900", "14.8631"),
            ("ash", "14.9900", "17.8381"),
            ("hil", "14.9900", "17.8381"),
            ("sin", "17.4900", "20.8131"),
        ],
    },
];

/// Images: (name, description, os_flavor, os_version).
const IMAGES: &[(&str, &str, &str, &str)] = &[
    ("ubuntu-24.04", "Ubuntu 24.04", "ubuntu", "24.04"),
    ("ubuntu-22.04", "Ubuntu 22.04", "ubuntu", "22.04"),
    ("debian-12", "Debian 12", "debian", "12"),
];

/// A location by name or numeric id.
pub(crate) fn location(key: &str) -> Option<&'static Location> {
    LOCATIONS
        .iter()
        .find(|l| l.name == key || l.id.to_string() == key)
}

/// A server type by name or numeric id.
pub(crate) fn server_type(key: &str) -> Option<&'static ServerType> {
    SERVER_TYPES
        .iter()
        .find(|t| t.name == key || t.id.to_string() == key)
}

/// Whether an image of this name (or id) exists.
pub(crate) fn image_exists(key: &str) -> bool {
    IMAGES.iter().enumerate().any(|(i, img)| {
        img.0 == key
            || image_id(i, "x86").to_string() == key
            || image_id(i, "arm").to_string() == key
    })
}

fn image_id(index: usize, arch: &str) -> u64 {
    161_547_000 + index as u64 * 2 + u64::from(arch == "arm")
}

impl ServerType {
    /// Whether the type is sold in `location`.
    pub(crate) fn sold_in(&self, location: &str) -> bool {
        self.prices.iter().any(|p| p.0 == location)
    }
}

const DEPRECATION: &str =
    r#"{"announced": "2025-09-01T00:00:00Z", "unavailable_after": "2026-12-01T00:00:00Z"}"#;

fn deprecation() -> Value {
    serde_json::from_str(DEPRECATION).unwrap_or(Value::Null)
}

fn price(net: &str, gross: &str) -> Value {
    json!({ "net": net, "gross": gross })
}

fn hourly(monthly: &str) -> String {
    format!("{:.4}", monthly.parse::<f64>().unwrap_or_default() / 730.0)
}

/// `location` as the API renders it.
pub(crate) fn location_json(l: &Location) -> Value {
    json!({
        "id": l.id, "name": l.name, "description": l.description, "city": l.city, "country": l.country,
        "latitude": l.latitude, "longitude": l.longitude, "network_zone": l.network_zone,
    })
}

/// `server_type` as the API renders it, with its per-location prices.
pub(crate) fn server_type_json(t: &ServerType) -> Value {
    let prices: Vec<Value> = t
        .prices
        .iter()
        .map(|(loc, net, gross)| {
            json!({
                "location": loc,
                "price_hourly": price(&hourly(net), &hourly(gross)),
                "price_monthly": price(net, gross),
                "included_traffic": if EU.contains(loc) { 21_990_232_555_520u64 } else { 1_099_511_627_776 },
                "price_per_tb_traffic": price("1.0000", "1.1900"),
            })
        })
        .collect();
    let locations: Vec<Value> = t
        .prices
        .iter()
        .filter_map(|(loc, _, _)| location(loc))
        .map(|l| {
            let dep = if t.deprecated_in.contains(&l.name) {
                deprecation()
            } else {
                Value::Null
            };
            json!({ "id": l.id, "name": l.name, "deprecation": dep })
        })
        .collect();
    json!({
        "id": t.id, "name": t.name, "description": t.description,
        "category": if t.cpu_type == "dedicated" { "Dedicated vCPU" } else { "Shared vCPU" },
        "cores": t.cores, "memory": t.memory_gb, "disk": t.disk_gb,
        "deprecated": t.deprecated,
        "deprecation": if t.deprecated { deprecation() } else { Value::Null },
        "prices": prices, "storage_type": "local", "cpu_type": t.cpu_type, "architecture": t.architecture,
        "locations": locations,
    })
}

/// The image `name` for `architecture`, as the API renders it.
pub(crate) fn image_json(name: &str, architecture: &str) -> Value {
    let (i, img) = IMAGES
        .iter()
        .enumerate()
        .find(|(i, img)| img.0 == name || image_id(*i, architecture).to_string() == name)
        .unwrap_or((0, &IMAGES[0]));
    json!({
        "id": image_id(i, architecture), "type": "system", "status": "available", "name": img.0,
        "description": img.1, "image_size": null, "disk_size": 5, "created": "2024-04-25T00:00:00Z",
        "created_from": null, "bound_to": null, "os_flavor": img.2, "os_version": img.3,
        "rapid_deploy": true, "protection": { "delete": false }, "deprecated": null, "deleted": null,
        "labels": {}, "architecture": architecture,
    })
}

/// The data center of `l` as the API renders it.
pub(crate) fn datacenter_json(l: &Location) -> Value {
    let ids: Vec<u64> = SERVER_TYPES
        .iter()
        .filter(|t| t.sold_in(l.name))
        .map(|t| t.id)
        .collect();
    json!({
        "id": l.id, "name": format!("{}-dc{}", l.name, l.id + 1), "description": format!("{} DC {}", l.city, l.id + 1),
        "location": location_json(l),
        "server_types": { "supported": ids, "available": ids, "available_for_migration": ids },
    })
}
