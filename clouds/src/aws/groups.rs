//! Security groups: the control plane's shared group with zero ingress (any ingress found
//! on reuse is revoked), or, when SSH was opted into, a dedicated group whose only ingress
//! is TCP 22 from the operator's CIDR. Deleting a dedicated group waits until no network
//! interface uses it any more.
use aws_sdk_ec2::types::{IpPermission, IpRange, Ipv6Range, ResourceType, SecurityGroup};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::client::Clients;
use super::errors::classify;
use super::tags::{self, filter, tag_filter};
use crate::{ErrorKind, Ownership, ProviderError, ProviderId, Reason};

const SHARED_DESCRIPTION: &str =
    "Levelrail nodes: no inbound rules; the node agent dials out to the control plane";
const SSH_DESCRIPTION: &str = "Levelrail node: SSH from the operator network only";

async fn group_named(
    c: &Clients,
    region: &str,
    vpc_id: &str,
    name: &str,
) -> Result<Option<SecurityGroup>, ProviderError> {
    let out = c
        .ec2(region)
        .await
        .describe_security_groups()
        .filters(filter("group-name", &[name]))
        .filters(filter("vpc-id", &[vpc_id]))
        .send()
        .await
        .map_err(classify)?;
    Ok(out.security_groups().first().cloned())
}

/// Finds group `name` in the VPC or creates it with `tags`; returns it and whether it existed.
async fn ensure_group(
    c: &Clients,
    region: &str,
    vpc_id: &str,
    name: &str,
    description: &str,
    tags: Vec<aws_sdk_ec2::types::Tag>,
) -> Result<(SecurityGroup, bool), ProviderError> {
    if let Some(g) = group_named(c, region, vpc_id, name).await? {
        return Ok((g, true));
    }
    let created = c
        .ec2(region)
        .await
        .create_security_group()
        .group_name(name)
        .description(description)
        .vpc_id(vpc_id)
        .set_tag_specifications(Some(tags::specs(&[ResourceType::SecurityGroup], &tags)))
        .send()
        .await
        .map_err(classify);
    match created {
        Ok(out) => {
            info!(group = name, region, "security group created");
            let id = out.group_id().unwrap_or_default().to_owned();
            Ok((
                SecurityGroup::builder()
                    .group_id(id)
                    .group_name(name)
                    .vpc_id(vpc_id)
                    .build(),
                false,
            ))
        }
        // A concurrent or lost earlier attempt created it.
        Err(e) if e.reason == Reason::AlreadyExists => {
            match group_named(c, region, vpc_id, name).await? {
                Some(g) => Ok((g, true)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The control plane's shared group in the VPC, with zero ingress.
pub(super) async fn shared_group(
    c: &Clients,
    region: &str,
    vpc_id: &str,
    o: &Ownership,
) -> Result<String, ProviderError> {
    let name = tags::shared_group_name(&o.control_plane);
    let tags = vec![
        tag(tags::CONTROL_PLANE, &o.control_plane),
        tag(tags::ROLE, "shared"),
        tag("Name", &name),
    ];
    let (group, existed) = ensure_group(c, region, vpc_id, &name, SHARED_DESCRIPTION, tags).await?;
    let id = group_id(&group)?;
    if existed && !group.ip_permissions().is_empty() {
        warn!(group = %id, rules = group.ip_permissions().len(), "the shared security group had inbound rules; revoking them");
        revoke(c, region, &id, group.ip_permissions()).await?;
    }
    Ok(id)
}

/// The provision's dedicated group: TCP 22 from `cidr` and nothing else.
pub(super) async fn ssh_group(
    c: &Clients,
    region: &str,
    vpc_id: &str,
    o: &Ownership,
    cidr: &str,
) -> Result<String, ProviderError> {
    let name = tags::ssh_group_name(o);
    let tags = tags::ownership_tags(o, Some(&name), &[(tags::ROLE, "ssh")]);
    let (group, _) = ensure_group(c, region, vpc_id, &name, SSH_DESCRIPTION, tags).await?;
    let id = group_id(&group)?;
    let wanted = ssh_rule(cidr);
    let (ours, others): (Vec<IpPermission>, Vec<IpPermission>) = group
        .ip_permissions()
        .iter()
        .cloned()
        .partition(|p| same_rule(p, &wanted));
    if !others.is_empty() {
        revoke(c, region, &id, &others).await?;
    }
    if ours.is_empty() {
        let added = c
            .ec2(region)
            .await
            .authorize_security_group_ingress()
            .group_id(&id)
            .ip_permissions(wanted)
            .send()
            .await
            .map_err(classify);
        match added {
            Ok(_) => info!(group = %id, cidr, "SSH opened from the operator's network"),
            Err(e) if e.reason == Reason::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(id)
}

fn tag(k: &str, v: &str) -> aws_sdk_ec2::types::Tag {
    aws_sdk_ec2::types::Tag::builder().key(k).value(v).build()
}

fn group_id(g: &SecurityGroup) -> Result<String, ProviderError> {
    g.group_id().map(str::to_owned).ok_or_else(|| {
        ProviderError::new(
            ProviderId::Aws,
            ErrorKind::Other,
            "unexpected_response",
            "a security group without an id",
        )
    })
}

/// Revokes `rules` as described (descriptions dropped: they do not identify a rule).
async fn revoke(
    c: &Clients,
    region: &str,
    id: &str,
    rules: &[IpPermission],
) -> Result<(), ProviderError> {
    let bare: Vec<IpPermission> = rules
        .iter()
        .map(|p| {
            IpPermission::builder()
                .set_ip_protocol(p.ip_protocol().map(str::to_owned))
                .set_from_port(p.from_port())
                .set_to_port(p.to_port())
                .set_ip_ranges(Some(
                    p.ip_ranges()
                        .iter()
                        .filter_map(|r| Some(IpRange::builder().cidr_ip(r.cidr_ip()?).build()))
                        .collect(),
                ))
                .set_ipv6_ranges(Some(
                    p.ipv6_ranges()
                        .iter()
                        .filter_map(|r| {
                            Some(Ipv6Range::builder().cidr_ipv6(r.cidr_ipv6()?).build())
                        })
                        .collect(),
                ))
                .set_user_id_group_pairs(Some(p.user_id_group_pairs().to_vec()))
                .set_prefix_list_ids(Some(p.prefix_list_ids().to_vec()))
                .build()
        })
        .collect();
    c.ec2(region)
        .await
        .revoke_security_group_ingress()
        .group_id(id)
        .set_ip_permissions(Some(bare))
        .send()
        .await
        .map_err(classify)?;
    Ok(())
}

/// TCP 22 from `cidr` (IPv4 or IPv6).
fn ssh_rule(cidr: &str) -> IpPermission {
    let b = IpPermission::builder()
        .ip_protocol("tcp")
        .from_port(22)
        .to_port(22);
    if cidr.contains(':') {
        b.ipv6_ranges(
            Ipv6Range::builder()
                .cidr_ipv6(cidr)
                .description("SSH, opted in at provision time")
                .build(),
        )
        .build()
    } else {
        b.ip_ranges(
            IpRange::builder()
                .cidr_ip(cidr)
                .description("SSH, opted in at provision time")
                .build(),
        )
        .build()
    }
}

fn same_rule(have: &IpPermission, want: &IpPermission) -> bool {
    let v4 = |p: &IpPermission| {
        p.ip_ranges()
            .iter()
            .filter_map(|r| r.cidr_ip().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let v6 = |p: &IpPermission| {
        p.ipv6_ranges()
            .iter()
            .filter_map(|r| r.cidr_ipv6().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    have.ip_protocol() == want.ip_protocol()
        && have.from_port() == want.from_port()
        && have.to_port() == want.to_port()
        && v4(have) == v4(want)
        && v6(have) == v6(want)
        && have.user_id_group_pairs().is_empty()
        && have.prefix_list_ids().is_empty()
}

/// The provision's dedicated groups in `region`.
pub(super) async fn provision_groups(
    c: &Clients,
    region: &str,
    o: &Ownership,
) -> Result<Vec<String>, ProviderError> {
    let out = c
        .ec2(region)
        .await
        .describe_security_groups()
        .filters(tag_filter(tags::PROVISION, &o.provision_id))
        .send()
        .await
        .map_err(classify)?;
    Ok(out
        .security_groups()
        .iter()
        .filter_map(|g| g.group_id().map(str::to_owned))
        .collect())
}

/// Waits until no network interface uses group `id` (the terminated instance's interface
/// is released), then deletes the group; gives up after the release timeout.
pub(super) async fn delete_group_when_released(
    c: &Clients,
    region: &str,
    id: &str,
) -> Result<(), ProviderError> {
    let deadline = Instant::now() + c.settings.release_timeout;
    loop {
        let enis = c
            .ec2(region)
            .await
            .describe_network_interfaces()
            .filters(filter("group-id", &[id]))
            .send()
            .await
            .map_err(classify)?;
        let in_use = enis.network_interfaces().len();
        if in_use == 0 {
            match c
                .ec2(region)
                .await
                .delete_security_group()
                .group_id(id)
                .send()
                .await
                .map_err(classify)
            {
                Ok(_) => {
                    info!(group = id, region, "dedicated security group deleted");
                    return Ok(());
                }
                Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
                Err(e) if e.reason != Reason::InUse => return Err(e),
                Err(_) => {}
            }
        }
        if Instant::now() >= deadline {
            return Err(ProviderError::new(
                ProviderId::Aws,
                ErrorKind::Unavailable,
                "DependencyViolation",
                &format!(
                    "security group {id} is still used by {in_use} network interface(s); delete again later"
                ),
            ));
        }
        debug!(
            group = id,
            in_use, "waiting for the network interface to be released"
        );
        tokio::time::sleep(c.settings.poll_interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_ssh_rule_counts_as_ours() {
        let want = ssh_rule("203.0.113.7/32");
        assert!(same_rule(&ssh_rule("203.0.113.7/32"), &want));
        assert!(!same_rule(&ssh_rule("0.0.0.0/0"), &want));
        assert!(ssh_rule("2001:db8::/48").ip_ranges().is_empty());
    }
}
