//! Instance types and where they may run: `DescribeInstanceTypes` (by name, with EC2's
//! filters, `MaxResults` 5–100) and `DescribeInstanceTypeOfferings` (`LocationType` `region`
//! or `availability-zone`, filters `location` and `instance-type`, `MaxResults` 5–1000),
//! both paginated with an opaque `NextToken` and never more than the fake's page limit per
//! answer (EC2 may answer fewer items than `MaxResults`); and whether a zone takes a launch:
//! a type the region does not offer is `Unsupported` in every zone, and a zone or subnet
//! told to refuse (or any zone of a full region) answers `InsufficientInstanceCapacity` (500) or `Unsupported` (400) with
//! EC2's messages, naming the zones that might take it.
use std::collections::BTreeMap;

use super::catalog::{INSTANCE_TYPES, TypeInfo, offered_in};
use super::state::{Inventory, LaunchRefusal, Subnet};
use super::wire::{Call, Handled, Reply, bad, one, passes};
use super::xml::Xml;

pub(crate) fn describe_types(call: &Call, page_limit: usize) -> Handled {
    let names = call.params.list("InstanceType");
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !INSTANCE_TYPES.iter().any(|t| &t.name == n))
        .collect();
    if !unknown.is_empty() {
        let list: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return Err(bad(
            "InvalidInstanceType",
            &format!(
                "The following supplied instance types do not exist: [{}]",
                list.join(", ")
            ),
        ));
    }
    let filters = call.params.filters();
    let mut items = Vec::new();
    for t in INSTANCE_TYPES
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
    {
        if passes(&filters, &BTreeMap::new(), |n| type_filter(t, n))? {
            items.push(type_xml(t));
        }
    }
    page(call, "instanceTypeSet", items, 100, page_limit)
}

/// A type's value for a `DescribeInstanceTypes` filter the fake supports.
fn type_filter(t: &TypeInfo, name: &str) -> Option<Vec<String>> {
    let burstable = t.name.starts_with('t');
    match name {
        "instance-type" => one(t.name),
        "current-generation" => one(&t.current.to_string()),
        "bare-metal" => one(&t.metal.to_string()),
        "processor-info.supported-architecture" => {
            Some(t.archs.iter().map(|a| (*a).to_owned()).collect())
        }
        "vcpu-info.default-vcpus" => one(&t.vcpus.to_string()),
        "memory-info.size-in-mib" => one(&t.mib.to_string()),
        "burstable-performance-supported" => one(&burstable.to_string()),
        "free-tier-eligible" => one(&(t.name == "t3.micro").to_string()),
        "hypervisor" => one(hypervisor(t)?),
        "supported-usage-class" => Some(vec!["on-demand".into(), "spot".into()]),
        "supported-root-device-type" => one("ebs"),
        "supported-virtualization-type" => one("hvm"),
        _ => None,
    }
}

/// Bare metal has no hypervisor; the previous generation runs on Xen.
fn hypervisor(t: &TypeInfo) -> Option<&'static str> {
    match (t.metal, t.current) {
        (true, _) => None,
        (false, true) => Some("nitro"),
        (false, false) => Some("xen"),
    }
}

/// `<item>` of `instanceTypeSet`.
fn type_xml(t: &TypeInfo) -> Vec<Xml> {
    let list = |name: &str, values: &[&str]| {
        Xml::node(name, values.iter().map(|v| Xml::text("item", v)).collect())
    };
    let mut out = vec![
        Xml::text("instanceType", t.name),
        Xml::text("currentGeneration", t.current),
        Xml::text("freeTierEligible", t.name == "t3.micro"),
        list("supportedUsageClasses", &["on-demand", "spot"]),
        list("supportedRootDeviceTypes", &["ebs"]),
        list("supportedVirtualizationTypes", &["hvm"]),
        Xml::text("bareMetal", t.metal),
    ];
    out.extend(hypervisor(t).map(|h| Xml::text("hypervisor", h)));
    out.extend([
        Xml::node(
            "processorInfo",
            vec![list("supportedArchitectures", t.archs)],
        ),
        Xml::node(
            "vCpuInfo",
            vec![
                Xml::text("defaultVCpus", t.vcpus),
                Xml::text("defaultCores", t.vcpus.div_ceil(2)),
                Xml::text("defaultThreadsPerCore", if t.vcpus > 1 { 2 } else { 1 }),
            ],
        ),
        Xml::node("memoryInfo", vec![Xml::text("sizeInMiB", t.mib)]),
        Xml::text("instanceStorageSupported", false),
        Xml::text("burstablePerformanceSupported", t.name.starts_with('t')),
    ]);
    out
}

pub(crate) fn describe_offerings(inv: &Inventory, call: &Call, page_limit: usize) -> Handled {
    let location_type = call.params.str("LocationType").unwrap_or("region");
    let locations: Vec<String> = match location_type {
        "region" => vec![call.region.clone()],
        "availability-zone" => inv.zones(&call.region),
        "availability-zone-id" | "outpost" => Vec::new(),
        other => {
            return Err(bad(
                "InvalidParameterValue",
                &format!("Value ({other}) for parameter locationType is invalid."),
            ));
        }
    };
    let filters = call.params.filters();
    let mut items = Vec::new();
    // A zone told to answer `Unsupported` offers nothing.
    let offering = |l: &String| inv.refusals.get(l) != Some(&LaunchRefusal::Unsupported);
    for location in locations.iter().filter(|l| offering(l)) {
        for t in INSTANCE_TYPES
            .iter()
            .filter(|t| offered_in(t, &call.region))
        {
            if passes(&filters, &BTreeMap::new(), |n| match n {
                "location" => one(location),
                "instance-type" => one(t.name),
                _ => None,
            })? {
                items.push(vec![
                    Xml::text("instanceType", t.name),
                    Xml::text("locationType", location_type),
                    Xml::text("location", location),
                ]);
            }
        }
    }
    page(call, "instanceTypeOfferingSet", items, 1000, page_limit)
}

/// One page of `items` under `set`, with `nextToken` when more remain. `MaxResults` must lie
/// within 5 and `max`; a page never holds more than `page_limit` items.
fn page(call: &Call, set: &str, items: Vec<Vec<Xml>>, max: usize, page_limit: usize) -> Handled {
    let size = match call.params.str("MaxResults") {
        None => max,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (5..=max).contains(&n) => n,
            _ => {
                return Err(bad(
                    "InvalidParameterValue",
                    &format!("Value ( {v} ) for parameter maxResults is invalid. Must be between 5 and {max}."),
                ));
            }
        },
    }
    .min(page_limit.max(1));
    let start = match call.params.str("NextToken") {
        None => 0,
        Some(token) => match token
            .strip_prefix("fake-page-")
            .and_then(|n| usize::from_str_radix(n, 16).ok())
            .filter(|n| *n < items.len())
        {
            Some(n) => n,
            None => {
                return Err(bad(
                    "InvalidPaginationToken",
                    &format!("The pagination token {token} is invalid."),
                ));
            }
        },
    };
    let end = (start + size).min(items.len());
    let mut out = vec![Xml::items(set, items[start..end].to_vec())];
    if end < items.len() {
        out.push(Xml::text("nextToken", format!("fake-page-{end:x}")));
    }
    Ok(out)
}

/// The refusal of a launch of `type_name` in `subnet`, if any.
pub(crate) fn launch_refusal(
    inv: &Inventory,
    call: &Call,
    subnet: &Subnet,
    type_name: &str,
) -> Option<Reply> {
    let offered = INSTANCE_TYPES
        .iter()
        .any(|t| t.name == type_name && offered_in(t, &call.region));
    if !offered {
        return Some(Reply::ec2_error(
            400,
            "Unsupported",
            "The requested configuration is currently not supported. Please check the documentation for supported configurations.",
        ));
    }
    let region_full = inv.full_regions.contains(&call.region);
    let refusal = inv
        .refusals
        .get(&subnet.id)
        .or(inv.refusals.get(&subnet.zone))
        .copied()
        .or(region_full.then_some(LaunchRefusal::InsufficientCapacity))?;
    let zone = &subnet.zone;
    let others: Vec<String> = if region_full {
        Vec::new()
    } else {
        inv.zones(&call.region)
            .into_iter()
            .filter(|z| z != zone && !inv.refusals.contains_key(z))
            .collect()
    };
    Some(match refusal {
        LaunchRefusal::InsufficientCapacity => Reply::ec2_error(
            500,
            "InsufficientInstanceCapacity",
            &format!(
                "We currently do not have sufficient {type_name} capacity in the Availability Zone you requested ({zone}). Our system will be working on provisioning additional capacity.{}",
                elsewhere(type_name, &others)
            ),
        ),
        LaunchRefusal::Unsupported => Reply::ec2_error(
            400,
            "Unsupported",
            &format!(
                "Your requested instance type ({type_name}) is not supported in your requested Availability Zone ({zone}). Please retry your request by not specifying an Availability Zone{}.",
                or_choosing(&others)
            ),
        ),
    })
}

/// EC2's pointer to the zones that still have capacity (nothing when none has).
fn elsewhere(type_name: &str, others: &[String]) -> String {
    if others.is_empty() {
        return String::new();
    }
    format!(
        " You can currently get {type_name} capacity by not specifying an Availability Zone in your request{}.",
        or_choosing(others)
    )
}

fn or_choosing(others: &[String]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!(" or choosing {}", others.join(", "))
    }
}
