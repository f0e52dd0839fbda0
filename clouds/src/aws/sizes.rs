//! The AWS sizes, live: `DescribeInstanceTypes` (current generation, not bare metal, x86_64
//! or arm64) intersected with the region's `DescribeInstanceTypeOfferings`
//! (`LocationType=region`, filtered by the region), both followed through every
//! `NextToken`. arm64 types are listed as `aarch64`: the catalog marks them unavailable
//! unless the control plane serves an aarch64 agent. Prices come from the Price List
//! (`prices.rs`), read beside.
use std::collections::BTreeSet;

use aws_sdk_ec2::types::{ArchitectureType, InstanceType, InstanceTypeInfo, LocationType};

use super::catalog::ROOT_VOLUME_GB;
use super::client::Clients;
use super::errors::{classify, invalid};
use super::tags::filter;
use crate::{Pricing, ProviderError, Size};
use levelrail_types::CpuArch;

/// The largest page `DescribeInstanceTypes` answers.
const TYPES_PAGE: i32 = 100;
/// The largest page `DescribeInstanceTypeOfferings` answers.
const OFFERINGS_PAGE: i32 = 1000;

/// The sizes offered in `region`, by vCPUs, memory, then id.
pub(super) async fn sizes(c: &Clients, region: &str) -> Result<Vec<Size>, ProviderError> {
    let offered = offered(c, region).await?;
    let mut sizes: Vec<Size> = instance_types(c, region)
        .await?
        .iter()
        .filter(|t| {
            t.instance_type()
                .is_some_and(|name| offered.contains(name.as_str()))
        })
        .filter_map(size)
        .collect();
    sizes.sort_by(|a, b| (a.vcpus, a.memory_mb, &a.id).cmp(&(b.vcpus, b.memory_mb, &b.id)));
    Ok(sizes)
}

/// The architecture of instance type `name` in `region` (it picks the image). EC2 answers
/// `InvalidInstanceType` for a type it does not know.
pub(super) async fn architecture(
    c: &Clients,
    region: &str,
    name: &str,
) -> Result<CpuArch, ProviderError> {
    let out = c
        .ec2(region)
        .await
        .describe_instance_types()
        .instance_types(InstanceType::from(name))
        .send()
        .await
        .map_err(classify)?;
    out.instance_types()
        .iter()
        .find(|t| t.instance_type().map(InstanceType::as_str) == Some(name))
        .and_then(arch_of)
        .ok_or_else(|| {
            invalid(
                "invalid_input",
                &format!("size {name} is neither x86_64 nor arm64 in {region}"),
            )
        })
}

/// Every current-generation, virtualised x86_64 or arm64 type, all pages.
async fn instance_types(c: &Clients, region: &str) -> Result<Vec<InstanceTypeInfo>, ProviderError> {
    let ec2 = c.ec2(region).await;
    let mut found = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let page = ec2
            .describe_instance_types()
            .filters(filter("current-generation", &["true"]))
            .filters(filter("bare-metal", &["false"]))
            .filters(filter(
                "processor-info.supported-architecture",
                &["x86_64", "arm64"],
            ))
            .max_results(TYPES_PAGE)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(classify)?;
        found.extend(page.instance_types().iter().cloned());
        match page.next_token() {
            Some(t) if !t.is_empty() => next = Some(t.to_owned()),
            _ => return Ok(found),
        }
    }
}

/// The names of the types offered in `region`, all pages.
async fn offered(c: &Clients, region: &str) -> Result<BTreeSet<String>, ProviderError> {
    let ec2 = c.ec2(region).await;
    let mut found = BTreeSet::new();
    let mut next: Option<String> = None;
    loop {
        let page = ec2
            .describe_instance_type_offerings()
            .location_type(LocationType::Region)
            .filters(filter("location", &[region]))
            .max_results(OFFERINGS_PAGE)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(classify)?;
        found.extend(
            page.instance_type_offerings()
                .iter()
                .filter_map(|o| o.instance_type().map(|t| t.as_str().to_owned())),
        );
        match page.next_token() {
            Some(t) if !t.is_empty() => next = Some(t.to_owned()),
            _ => return Ok(found),
        }
    }
}

/// x86_64 when the type runs it, else arm64; `None` for i386-only or Mac types.
fn arch_of(t: &InstanceTypeInfo) -> Option<CpuArch> {
    let archs = t
        .processor_info()
        .map(|p| p.supported_architectures())
        .unwrap_or_default();
    if archs.contains(&ArchitectureType::X8664) {
        Some(CpuArch::X86_64)
    } else if archs.contains(&ArchitectureType::Arm64) {
        Some(CpuArch::Aarch64)
    } else {
        None
    }
}

/// The size of a type with a name, an architecture, vCPUs and memory.
fn size(t: &InstanceTypeInfo) -> Option<Size> {
    let id = t.instance_type()?.as_str().to_owned();
    let vcpus = u32::try_from(t.v_cpu_info()?.default_v_cpus()?).ok()?;
    let memory_mb = u32::try_from(t.memory_info()?.size_in_mib()?).ok()?;
    Some(Size {
        architecture: arch_of(t)?,
        unavailable_reason: None,
        name: format!("{id} ({vcpus} vCPU, {} GiB)", gib(memory_mb)),
        id,
        vcpus,
        memory_mb,
        disk_gb: ROOT_VOLUME_GB as u32,
        pricing: Pricing::Unread,
    })
}

/// MiB as GiB, with a decimal only when needed (`0.5`, `1`, `1.5`).
fn gib(mib: u32) -> String {
    if mib.is_multiple_of(1024) {
        (mib / 1024).to_string()
    } else {
        format!("{:.1}", f64::from(mib) / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{MemoryInfo, ProcessorInfo, VCpuInfo};

    fn info(name: &str, archs: &[ArchitectureType], vcpus: i32, mib: i64) -> InstanceTypeInfo {
        InstanceTypeInfo::builder()
            .instance_type(InstanceType::from(name))
            .processor_info(
                ProcessorInfo::builder()
                    .set_supported_architectures(Some(archs.to_vec()))
                    .build(),
            )
            .v_cpu_info(VCpuInfo::builder().default_v_cpus(vcpus).build())
            .memory_info(MemoryInfo::builder().size_in_mib(mib).build())
            .build()
    }

    #[test]
    fn types_become_sizes_with_their_architecture_and_memory_in_gib() {
        let t3 = size(&info("t3.nano", &[ArchitectureType::X8664], 2, 512)).expect("a size");
        assert_eq!(
            (t3.name.as_str(), t3.architecture, t3.disk_gb),
            ("t3.nano (2 vCPU, 0.5 GiB)", CpuArch::X86_64, 20)
        );
        let arm = size(&info("t4g.small", &[ArchitectureType::Arm64], 2, 2048)).expect("a size");
        assert_eq!(
            (arm.name.as_str(), arm.architecture),
            ("t4g.small (2 vCPU, 2 GiB)", CpuArch::Aarch64)
        );
        let both = info(
            "t2.micro",
            &[ArchitectureType::I386, ArchitectureType::X8664],
            1,
            1024,
        );
        assert_eq!(arch_of(&both), Some(CpuArch::X86_64));
        assert!(
            size(&info(
                "mac2.metal",
                &[ArchitectureType::Arm64Mac],
                12,
                16384
            ))
            .is_none()
        );
        assert!(size(&info("old.i386", &[ArchitectureType::I386], 1, 1024)).is_none());
    }
}
