//! The AWS catalog: regions from `DescribeRegions` (opted-out regions hidden) with their
//! console names, and the curated `t3.micro` … `t3.xlarge` sizes of the documentation (no
//! live price: EC2 prices need the separate Pricing API, so the picker says "pricing
//! varies").
use crate::providers::{Region, Size};

/// Root volume of every instance, in GB.
pub(crate) const ROOT_VOLUME_GB: i32 = 20;

/// The curated sizes: (type, vCPUs, memory MiB).
const SIZES: [(&str, u32, u32); 5] = [
    ("t3.micro", 2, 1024),
    ("t3.small", 2, 2048),
    ("t3.medium", 2, 4096),
    ("t3.large", 2, 8192),
    ("t3.xlarge", 4, 16384),
];

/// The curated sizes (the same in every region).
pub(crate) fn sizes() -> Vec<Size> {
    SIZES
        .iter()
        .map(|(id, vcpus, memory_mb)| Size {
            // Every size of this catalog is x86-64.
            architecture: crate::arch::CpuArch::X86_64,
            unavailable_reason: None,
            id: (*id).to_owned(),
            name: format!("{id} ({vcpus} vCPU, {} GiB)", memory_mb / 1024),
            vcpus: *vcpus,
            memory_mb: *memory_mb,
            disk_gb: ROOT_VOLUME_GB as u32,
            price_monthly: None,
            currency: None,
        })
        .collect()
}

/// The console name of `id`, or the id itself for a region added later.
pub(crate) fn region(id: &str) -> Region {
    let name = match id {
        "us-east-1" => "US East (N. Virginia)",
        "us-east-2" => "US East (Ohio)",
        "us-west-1" => "US West (N. California)",
        "us-west-2" => "US West (Oregon)",
        "af-south-1" => "Africa (Cape Town)",
        "ap-east-1" => "Asia Pacific (Hong Kong)",
        "ap-south-1" => "Asia Pacific (Mumbai)",
        "ap-south-2" => "Asia Pacific (Hyderabad)",
        "ap-southeast-1" => "Asia Pacific (Singapore)",
        "ap-southeast-2" => "Asia Pacific (Sydney)",
        "ap-southeast-3" => "Asia Pacific (Jakarta)",
        "ap-southeast-4" => "Asia Pacific (Melbourne)",
        "ap-northeast-1" => "Asia Pacific (Tokyo)",
        "ap-northeast-2" => "Asia Pacific (Seoul)",
        "ap-northeast-3" => "Asia Pacific (Osaka)",
        "ca-central-1" => "Canada (Central)",
        "ca-west-1" => "Canada West (Calgary)",
        "eu-central-1" => "Europe (Frankfurt)",
        "eu-central-2" => "Europe (Zurich)",
        "eu-west-1" => "Europe (Ireland)",
        "eu-west-2" => "Europe (London)",
        "eu-west-3" => "Europe (Paris)",
        "eu-north-1" => "Europe (Stockholm)",
        "eu-south-1" => "Europe (Milan)",
        "eu-south-2" => "Europe (Spain)",
        "il-central-1" => "Israel (Tel Aviv)",
        "me-south-1" => "Middle East (Bahrain)",
        "me-central-1" => "Middle East (UAE)",
        "sa-east-1" => "South America (São Paulo)",
        _ => id,
    };
    Region {
        id: id.to_owned(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_t3_micro_through_xlarge_without_prices() {
        let ids: Vec<String> = sizes().into_iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            ["t3.micro", "t3.small", "t3.medium", "t3.large", "t3.xlarge"]
        );
        assert!(
            sizes()
                .iter()
                .all(|s| s.price_monthly.is_none() && s.disk_gb == 20)
        );
    }

    #[test]
    fn regions_get_console_names() {
        assert_eq!(region("eu-west-1").name, "Europe (Ireland)");
        assert_eq!(region("xx-new-1").name, "xx-new-1");
    }
}
