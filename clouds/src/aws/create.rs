//! Idempotent creation. The provision's instance is looked up by tag first (a retry after
//! a crash adopts it, whichever subnet it went to; this also covers clouds that ignore
//! `ClientToken`, like moto); then the instance type's architecture, the image (Canonical's
//! newest Ubuntu 24.04 for it unless overridden), the subnets, the security group and the
//! key pair are ensured, each idempotently; then `RunInstances` is tried in each subnet in
//! turn while EC2 answers that the zone cannot take the instance (`InsufficientInstanceCapacity`,
//! `Unsupported`). Each subnet's call carries its own `ClientToken` derived from the
//! provision id and the subnet, so a retried call (by the SDK after a lost answer, or by a
//! later attempt) returns the instance that call created. Any other failure ends the create
//! at once: a lost answer is not a refusal, and moving on could launch a second instance.
//! After a launch, an older instance of the provision that the first lookup missed wins
//! and the new one is terminated.
use aws_sdk_ec2::types::{
    BlockDeviceMapping, EbsBlockDevice, HttpTokensState, Image, Instance,
    InstanceMetadataOptionsRequest, InstanceNetworkInterfaceSpecification, InstanceType,
    ResourceType, Tag, VolumeType,
};
use base64::Engine as _;
use tracing::{info, warn};

use super::catalog::ROOT_VOLUME_GB;
use super::errors::{classify, invalid};
use super::groups;
use super::network::{self, Subnet, valid_cidr};
use super::tags::{self, filter, tag_filter};
use super::{AwsProvider, server_info, sizes};
use crate::{CreateServer, ErrorKind, ProviderError, ProviderId, Reason, ServerInfo};
use levelrail_types::CpuArch;

/// Canonical's AWS account: the owner of the official Ubuntu images.
pub const CANONICAL_OWNER: &str = "099720109477";
/// The name pattern of Ubuntu 24.04 LTS (noble) server images for x86_64 on gp3.
pub const UBUNTU_2404: &str = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*";
/// The same for arm64 (Graviton).
pub const UBUNTU_2404_ARM64: &str = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-arm64-server-*";
/// States of an instance that still exists (or is going away).
pub(super) const LIVE_STATES: [&str; 5] =
    ["pending", "running", "stopping", "stopped", "shutting-down"];

/// What every subnet's `RunInstances` of one create carries.
#[derive(Debug)]
struct Launch<'a> {
    req: &'a CreateServer,
    image: Image,
    group: String,
    key_name: Option<String>,
    tags: Vec<Tag>,
}

pub(super) async fn create_server(
    p: &AwsProvider,
    req: &CreateServer,
) -> Result<ServerInfo, ProviderError> {
    validate(req)?;
    let c = &p.clients;
    let region = req.region.trim();
    let o = &req.ownership;
    if let Some(existing) = p
        .provision_instances(region, &o.provision_id)
        .await?
        .into_iter()
        .next()
    {
        info!(provision = %o.provision_id, instance = existing.instance_id().unwrap_or_default(), "adopting the instance an earlier attempt created");
        return Ok(server_info(region, &existing));
    }
    let arch = sizes::architecture(c, region, req.size.trim()).await?;
    let image = image(p, region, req.image.as_deref(), arch).await?;
    let place = network::placement(c, region).await?;
    let group = match req.ssh_source_cidr.as_deref() {
        Some(cidr) => groups::ssh_group(c, region, &place.vpc_id, o, cidr.trim()).await?,
        None => groups::shared_group(c, region, &place.vpc_id, o).await?,
    };
    let key_name = match req.ssh_public_keys.first() {
        Some(key) => Some(key_pair(p, region, req, key).await?),
        None => None,
    };
    if req.ssh_public_keys.len() > 1 {
        warn!(provision = %o.provision_id, keys = req.ssh_public_keys.len(), "EC2 takes one key pair per instance: only the first SSH key is installed");
    }
    let launch = Launch {
        req,
        image,
        group,
        key_name,
        tags: tags::ownership_tags(o, Some(&req.name), &[]),
    };
    let mut refused: Vec<(String, ProviderError)> = Vec::new();
    for subnet in &place.subnets {
        match run_in(p, region, &launch, subnet).await {
            Ok(instance) => {
                info!(provision = %o.provision_id, instance = instance.instance_id().unwrap_or_default(), region, zone = %subnet.zone, "instance created");
                let kept = keep_oldest(p, region, &o.provision_id, instance).await?;
                return Ok(server_info(region, &kept));
            }
            Err(e) if e.reason == Reason::ZonalCapacity => {
                warn!(provision = %o.provision_id, zone = %subnet.zone, code = %e.code, "the zone cannot take the instance; trying the next one");
                refused.push((subnet.zone.clone(), e));
            }
            Err(e) => return Err(e),
        }
    }
    Err(exhausted(region, req.size.trim(), refused))
}

/// `RunInstances` in `subnet` with the subnet's own `ClientToken`.
async fn run_in(
    p: &AwsProvider,
    region: &str,
    l: &Launch<'_>,
    subnet: &Subnet,
) -> Result<Instance, ProviderError> {
    let o = &l.req.ownership;
    let root = l.image.root_device_name().unwrap_or("/dev/sda1").to_owned();
    let run = p
        .clients
        .ec2(region)
        .await
        .run_instances()
        .image_id(l.image.image_id().unwrap_or_default())
        .instance_type(InstanceType::from(l.req.size.trim()))
        .min_count(1)
        .max_count(1)
        .client_token(tags::client_token(
            &o.provision_id,
            &subnet.id,
            l.req.size.trim(),
        ))
        .user_data(base64::engine::general_purpose::STANDARD.encode(l.req.user_data.as_bytes()))
        .set_key_name(l.key_name.clone())
        .network_interfaces(
            InstanceNetworkInterfaceSpecification::builder()
                .device_index(0)
                .subnet_id(&subnet.id)
                .groups(&l.group)
                .associate_public_ip_address(true)
                .delete_on_termination(true)
                .build(),
        )
        .block_device_mappings(
            BlockDeviceMapping::builder()
                .device_name(root)
                .ebs(
                    EbsBlockDevice::builder()
                        .volume_size(ROOT_VOLUME_GB)
                        .volume_type(VolumeType::Gp3)
                        .delete_on_termination(true)
                        .build(),
                )
                .build(),
        )
        .set_tag_specifications(Some(tags::specs(
            &[
                ResourceType::Instance,
                ResourceType::Volume,
                ResourceType::NetworkInterface,
            ],
            &l.tags,
        )))
        .metadata_options(
            InstanceMetadataOptionsRequest::builder()
                .http_tokens(HttpTokensState::Required)
                .build(),
        )
        .send()
        .await
        .map_err(classify);
    match run {
        Ok(out) => out.instances().first().cloned().ok_or_else(|| {
            ProviderError::new(
                ProviderId::Aws,
                ErrorKind::Other,
                "unexpected_response",
                "RunInstances returned no instance",
            )
        }),
        // The token was used with other parameters (e.g. a newer image since the first
        // attempt): the instance of the first attempt is the provision's.
        Err(e) if e.reason == Reason::IdempotencyMismatch => p
            .provision_instances(region, &o.provision_id)
            .await?
            .into_iter()
            .next()
            .ok_or(e),
        Err(e) => Err(e),
    }
}

/// The provision's oldest pending or running instance, once `mine` is launched. The first
/// lookup may miss an instance whose answer was lost (EC2's reads are eventually
/// consistent), and a zone that refused then may have capacity now: when an older instance
/// of the provision shows up, `mine` is terminated and the older one is the provision's,
/// so a provision never keeps two servers. Every create settles on the same one.
async fn keep_oldest(
    p: &AwsProvider,
    region: &str,
    pid: &str,
    mine: Instance,
) -> Result<Instance, ProviderError> {
    let oldest = p
        .provision_instances(region, pid)
        .await?
        .into_iter()
        .find(|i| {
            i.state()
                .and_then(|s| s.name())
                .is_some_and(|n| matches!(n.as_str(), "pending" | "running"))
        });
    let Some(oldest) = oldest.filter(|i| i.instance_id() != mine.instance_id()) else {
        return Ok(mine);
    };
    let extra = mine.instance_id().unwrap_or_default().to_owned();
    warn!(provision = %pid, kept = oldest.instance_id().unwrap_or_default(), terminated = %extra, "an earlier launch of the provision showed up late; terminating the newer instance");
    p.clients
        .ec2(region)
        .await
        .terminate_instances()
        .instance_ids(extra)
        .send()
        .await
        .map_err(classify)?;
    Ok(oldest)
}

/// Every zone refused: a capacity error naming each zone's answer, with the last code.
fn exhausted(region: &str, size: &str, refused: Vec<(String, ProviderError)>) -> ProviderError {
    let answers: Vec<String> = refused
        .iter()
        .map(|(zone, e)| format!("{zone}: {}", e.code))
        .collect();
    let (code, status) = refused
        .last()
        .map(|(_, e)| (e.code.clone(), e.status))
        .unwrap_or_else(|| ("InsufficientInstanceCapacity".into(), None));
    let e = ProviderError::new(
        ProviderId::Aws,
        ErrorKind::CapacityUnavailable,
        &code,
        &format!(
            "no zone of {region} can launch {size} now ({})",
            answers.join(", ")
        ),
    );
    match status {
        Some(s) => e.with_status(s),
        None => e,
    }
}

fn validate(req: &CreateServer) -> Result<(), ProviderError> {
    req.ownership.provision(ProviderId::Aws)?;
    if req.region.trim().is_empty() {
        return Err(invalid("invalid_input", "a region is required"));
    }
    if let Some(cidr) = &req.ssh_source_cidr
        && !valid_cidr(cidr.trim())
    {
        return Err(invalid(
            "invalid_input",
            "ssh_source_cidr must be an IPv4 or IPv6 CIDR such as 203.0.113.7/32",
        ));
    }
    for (i, k) in req.ssh_public_keys.iter().enumerate() {
        if k.split_whitespace().count() < 2 {
            return Err(invalid(
                "invalid_input",
                &format!("ssh_public_keys[{i}] is not an OpenSSH public key"),
            ));
        }
    }
    if let Some(image) = &req.image
        && !image.trim().starts_with("ami-")
    {
        return Err(invalid(
            "invalid_input",
            "an AWS image override must be an AMI id (ami-…)",
        ));
    }
    Ok(())
}

/// The override AMI, or Canonical's newest available Ubuntu 24.04 image for `arch` in
/// `region`.
pub(super) async fn image(
    p: &AwsProvider,
    region: &str,
    image: Option<&str>,
    arch: CpuArch,
) -> Result<Image, ProviderError> {
    let (pattern, architecture) = match arch {
        CpuArch::X86_64 => (UBUNTU_2404, "x86_64"),
        CpuArch::Aarch64 => (UBUNTU_2404_ARM64, "arm64"),
    };
    let ec2 = p.clients.ec2(region).await;
    let found = match image {
        Some(id) => ec2.describe_images().image_ids(id.trim()).send().await,
        None => {
            ec2.describe_images()
                .owners(CANONICAL_OWNER)
                .filters(filter("name", &[pattern]))
                .filters(filter("state", &["available"]))
                .filters(filter("architecture", &[architecture]))
                .filters(filter("virtualization-type", &["hvm"]))
                .send()
                .await
        }
    }
    .map_err(classify)?;
    newest(found.images()).cloned().ok_or_else(|| match image {
        Some(id) => invalid(
            "image_not_found",
            &format!("image {id} does not exist in {region}"),
        ),
        None => invalid(
            "image_not_found",
            &format!("no Ubuntu 24.04 {arch} image from Canonical in {region}: pass an AMI id"),
        ),
    })
}

/// The newest image by creation date (ISO 8601 strings sort by time).
pub(super) fn newest(images: &[Image]) -> Option<&Image> {
    images.iter().max_by(|a, b| {
        a.creation_date()
            .cmp(&b.creation_date())
            .then(a.image_id().cmp(&b.image_id()))
    })
}

/// The provision's key pair with `key` (imported once; reused by later attempts).
async fn key_pair(
    p: &AwsProvider,
    region: &str,
    req: &CreateServer,
    key: &str,
) -> Result<String, ProviderError> {
    let name = tags::key_pair_name(&req.ownership);
    let c = &p.clients;
    let existing = c
        .ec2(region)
        .await
        .describe_key_pairs()
        .filters(filter("key-name", &[&name]))
        .send()
        .await
        .map_err(classify)?;
    if !existing.key_pairs().is_empty() {
        return Ok(name);
    }
    let tags = tags::ownership_tags(&req.ownership, Some(&name), &[(tags::ROLE, "key")]);
    let imported = c
        .ec2(region)
        .await
        .import_key_pair()
        .key_name(&name)
        .public_key_material(aws_sdk_ec2::primitives::Blob::new(key.trim().as_bytes()))
        .set_tag_specifications(Some(tags::specs(&[ResourceType::KeyPair], &tags)))
        .send()
        .await
        .map_err(classify);
    match imported {
        Ok(_) => info!(key = %name, region, "SSH key imported as a key pair"),
        Err(e) if e.reason == Reason::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    Ok(name)
}

/// Live instances of provision `pid` in `region`, oldest first.
pub(super) async fn provision_instances(
    p: &AwsProvider,
    region: &str,
    pid: &str,
) -> Result<Vec<Instance>, ProviderError> {
    let out = p
        .clients
        .ec2(region)
        .await
        .describe_instances()
        .filters(tag_filter(tags::PROVISION, pid))
        .filters(filter("instance-state-name", &LIVE_STATES))
        .send()
        .await
        .map_err(classify)?;
    let mut found: Vec<Instance> = out
        .reservations()
        .iter()
        .flat_map(|r| r.instances().iter().cloned())
        .collect();
    found.sort_by(|a, b| {
        a.launch_time()
            .map(|t| t.secs())
            .cmp(&b.launch_time().map(|t| t.secs()))
            .then(a.instance_id().cmp(&b.instance_id()))
    });
    Ok(found)
}
