//! The VM sizes of a location from Resource SKUs (`GET /subscriptions/{sub}/providers/
//! Microsoft.Compute/skus?$filter=location eq '{location}'`, api-version 2021-07-01, every
//! `nextLink` followed). A size is listed unavailable, with the reason, when the
//! subscription may not use it in that location (a `Location` restriction) or when it cannot
//! boot the Hyper-V generation of the image creates use (`HyperVGenerations`). A `Zone`
//! restriction does not count: Levelrail creates regional (zone-less) VMs. The architecture
//! comes from `CpuArchitectureType`, and from the size name only when the SKU omits it.
use serde::Deserialize;

use super::names;
use super::wire::{UBUNTU, UBUNTU_GENERATION};
use super::{API_SKUS, AzureProvider};
use crate::{Pricing, ProviderError, Size};
use levelrail_types::CpuArch;

/// An entry of the Resource SKUs list (the parts Levelrail reads).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceSku {
    #[serde(default)]
    pub(super) resource_type: String,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) locations: Vec<String>,
    #[serde(default)]
    pub(super) capabilities: Vec<Capability>,
    #[serde(default)]
    pub(super) restrictions: Vec<Restriction>,
}

/// `{name, value}`: every capability value is a string (`"2"`, `"3.5"`, `"V1,V2"`).
#[derive(Debug, Deserialize)]
pub(super) struct Capability {
    pub(super) name: String,
    #[serde(default)]
    pub(super) value: String,
}

/// Why the subscription may not use the SKU in some locations or zones.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Restriction {
    /// `Location` or `Zone`.
    #[serde(default, rename = "type")]
    pub(super) kind: String,
    /// The locations (for `Location`) or zones (for `Zone`).
    #[serde(default)]
    pub(super) values: Vec<String>,
    /// `NotAvailableForSubscription` or `QuotaId`.
    #[serde(default)]
    pub(super) reason_code: String,
}

impl ResourceSku {
    fn capability(&self, name: &str) -> Option<&str> {
        self.capabilities
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .map(|c| c.value.as_str())
    }

    /// The Location restriction that applies in `location`, if any.
    fn restricted_in(&self, location: &str) -> Option<&Restriction> {
        self.restrictions.iter().find(|r| {
            r.kind.eq_ignore_ascii_case("Location")
                && r.values.iter().any(|v| v.eq_ignore_ascii_case(location))
        })
    }
}

/// The path of the SKU list of `location`.
pub(super) fn path(subscription_path: &str, location: &str) -> String {
    let filter = names::encode(&format!("location eq '{location}'"));
    format!("{subscription_path}/providers/Microsoft.Compute/skus?$filter={filter}")
}

/// The VM sizes of `location` (its name already checked by the caller).
pub(super) async fn list_sizes(
    p: &AzureProvider,
    location: &str,
) -> Result<Vec<Size>, ProviderError> {
    let path = path(&p.scope.subscription_path(), location);
    let skus: Vec<ResourceSku> = p.arm.list(&path, API_SKUS).await?;
    Ok(sizes_of(skus, location))
}

/// The virtual machine SKUs sold in `location`, as sizes.
pub(super) fn sizes_of(skus: Vec<ResourceSku>, location: &str) -> Vec<Size> {
    skus.into_iter()
        .filter(|s| s.resource_type.eq_ignore_ascii_case("virtualMachines"))
        .filter(|s| s.locations.iter().any(|l| l.eq_ignore_ascii_case(location)))
        .map(|s| size(&s, location))
        .collect()
}

fn size(s: &ResourceSku, location: &str) -> Size {
    let number = |name: &str| {
        s.capability(name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let architecture = s
        .capability("CpuArchitectureType")
        .and_then(CpuArch::parse)
        .unwrap_or_else(|| arch_from_name(&s.name));
    // The OS disk is not fixed by the size; ARM publishes no price (the Retail Prices
    // API does: `prices.rs`).
    Size {
        id: s.name.clone(),
        name: s.name.clone(),
        vcpus: number("vCPUs") as u32,
        memory_mb: (number("MemoryGB") * 1024.0).round() as u32,
        disk_gb: 0,
        pricing: Pricing::Unread,
        architecture,
        unavailable_reason: unavailable_reason(s, location),
    }
}

/// Why a VM of `s` cannot be created in `location` from the image creates use, if so.
fn unavailable_reason(s: &ResourceSku, location: &str) -> Option<String> {
    if let Some(r) = s.restricted_in(location) {
        return Some(format!(
            "Azure does not offer {} to this subscription in {location} ({})",
            s.name,
            if r.reason_code.is_empty() {
                "restricted"
            } else {
                r.reason_code.as_str()
            }
        ));
    }
    // A SKU that names no generation boots V1 only (Azure's default before Gen2 existed).
    let generations = s.capability("HyperVGenerations").unwrap_or("V1");
    let supported = generations
        .split(',')
        .any(|g| g.trim().eq_ignore_ascii_case(UBUNTU_GENERATION));
    (!supported).then(|| {
        format!(
            "{} boots Hyper-V generation {generations} only, and the image ({}:{}:{}) needs {UBUNTU_GENERATION}",
            s.name, UBUNTU[0], UBUNTU[1], UBUNTU[2]
        )
    })
}

/// A VM size's architecture from its name, for SKUs without `CpuArchitectureType`: Azure
/// marks Arm sizes with the `p` feature letter after the vCPU count (`Standard_D2ps_v5`,
/// `Standard_B2pts_v2`); the family letters before it (`NP` in `Standard_NP10s`) do not count.
pub(super) fn arch_from_name(name: &str) -> CpuArch {
    let base = name.strip_prefix("Standard_").unwrap_or(name);
    let base = base.split('_').next().unwrap_or(base);
    let features = base.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let features = features.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
    if features.contains(['p', 'P']) {
        CpuArch::Aarch64
    } else {
        CpuArch::X86_64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arm_sizes_are_told_by_the_p_feature_letter() {
        for arm in [
            "Standard_D2ps_v5",
            "Standard_B2pts_v2",
            "Standard_E4pds_v5",
            "Standard_D16plds_v5",
        ] {
            assert_eq!(arch_from_name(arm), CpuArch::Aarch64, "{arm}");
        }
        for x86 in [
            "Standard_B2s",
            "Standard_D2s_v5",
            "Standard_NP10s",
            "Standard_DC2s_v3",
            "Standard_M416-208s_v2",
        ] {
            assert_eq!(arch_from_name(x86), CpuArch::X86_64, "{x86}");
        }
    }

    fn sku(name: &str, caps: &[(&str, &str)], restrictions: serde_json::Value) -> ResourceSku {
        let caps: Vec<_> = caps
            .iter()
            .map(|(n, v)| json!({ "name": n, "value": v }))
            .collect();
        serde_json::from_value(json!({
            "resourceType": "virtualMachines", "name": name, "locations": ["westeurope"],
            "capabilities": caps, "restrictions": restrictions
        }))
        .expect("sku")
    }

    #[test]
    fn restricted_and_gen1_only_sizes_are_unavailable_with_the_reason() {
        let skus = vec![
            sku(
                "Standard_B2s",
                &[
                    ("vCPUs", "2"),
                    ("MemoryGB", "4"),
                    ("HyperVGenerations", "V1,V2"),
                ],
                json!([{ "type": "Zone", "values": ["westeurope"], "reasonCode": "NotAvailableForSubscription" }]),
            ),
            sku(
                "Standard_A1_v2",
                &[
                    ("vCPUs", "1"),
                    ("MemoryGB", "2"),
                    ("HyperVGenerations", "V1"),
                ],
                json!([]),
            ),
            sku(
                "Standard_E2s_v5",
                &[("HyperVGenerations", "V1,V2")],
                json!([{ "type": "Location", "values": ["WestEurope"], "reasonCode": "NotAvailableForSubscription" }]),
            ),
            sku(
                "Standard_D2s_v5",
                &[
                    ("HyperVGenerations", "V2"),
                    ("CpuArchitectureType", "Arm64"),
                ],
                json!([]),
            ),
        ];

        let sizes = sizes_of(skus, "westeurope");

        let by = |id: &str| sizes.iter().find(|s| s.id == id).expect(id);
        // (The SKU's CpuArchitectureType wins over the name, which reads as x86 here.)
        let b2s = by("Standard_B2s");
        assert_eq!(
            (b2s.vcpus, b2s.memory_mb, &b2s.unavailable_reason),
            (2, 4096, &None)
        );
        let a1 = by("Standard_A1_v2")
            .unavailable_reason
            .clone()
            .expect("gen1");
        assert!(
            a1.contains("generation V1") && a1.contains("needs V2"),
            "{a1}"
        );
        let e2 = by("Standard_E2s_v5")
            .unavailable_reason
            .clone()
            .expect("restricted");
        assert!(e2.contains("NotAvailableForSubscription"), "{e2}");
        assert_eq!(by("Standard_D2s_v5").architecture, CpuArch::Aarch64);
        assert!(sizes_of(vec![], "westeurope").is_empty());
    }

    #[test]
    fn the_answer_of_the_skus_example_reads_as_gen1_only_sizes() {
        let example: serde_json::Value = serde_json::from_str(include_str!(
            "../../../tests/specs/azure-compute-skus-2021-07-01-example-ListAvailableResourceSkusForARegion.json"
        ))
        .expect("example");
        let skus: Vec<ResourceSku> =
            serde_json::from_value(example["responses"]["200"]["body"]["value"].clone())
                .expect("the example parses");

        let sizes = sizes_of(skus, "westus");

        let got: Vec<(&str, u32, u32, CpuArch)> = sizes
            .iter()
            .map(|s| (s.id.as_str(), s.vcpus, s.memory_mb, s.architecture))
            .collect();
        assert_eq!(
            got,
            [
                ("Standard_A0", 1, 768, CpuArch::X86_64),
                ("Standard_A1", 1, 1792, CpuArch::X86_64)
            ]
        );
        assert!(
            sizes.iter().all(|s| s
                .unavailable_reason
                .as_deref()
                .is_some_and(|r| r.contains("V1 only"))),
            "{sizes:?}"
        );
    }
}
