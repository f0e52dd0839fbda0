//! Where an instance goes: the operator's subnet for the region (its VPC), else the default
//! VPC's default subnet (first by availability zone, so every attempt picks the same one).
use std::net::IpAddr;

use super::client::Clients;
use super::errors::{classify, invalid};
use super::tags::filter;
use crate::providers::ProviderError;

/// The VPC and subnet of a new instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    pub(super) vpc_id: String,
    pub(super) subnet_id: String,
}

/// The operator's subnet for `region`, else the default VPC's first default subnet.
pub(super) async fn placement(c: &Clients, region: &str) -> Result<Placement, ProviderError> {
    if let Some(subnet_id) = c.settings.subnets.get(region) {
        let out = c
            .ec2(region)
            .await
            .describe_subnets()
            .subnet_ids(subnet_id)
            .send()
            .await
            .map_err(classify)?;
        let vpc = out
            .subnets()
            .first()
            .and_then(|s| s.vpc_id())
            .ok_or_else(|| {
                invalid(
                    "subnet_not_found",
                    &format!("the configured subnet {subnet_id} does not exist in {region}"),
                )
            })?;
        return Ok(Placement {
            vpc_id: vpc.to_owned(),
            subnet_id: subnet_id.clone(),
        });
    }
    let vpcs = c
        .ec2(region)
        .await
        .describe_vpcs()
        .filters(filter("is-default", &["true"]))
        .send()
        .await
        .map_err(classify)?;
    let Some(vpc_id) = vpcs.vpcs().first().and_then(|v| v.vpc_id()) else {
        return Err(invalid(
            "no_default_vpc",
            &format!(
                "{region} has no default VPC: name a subnet for it (LEVELRAIL_AWS_SUBNETS={region}=subnet-…)"
            ),
        ));
    };
    let subnets = c
        .ec2(region)
        .await
        .describe_subnets()
        .filters(filter("vpc-id", &[vpc_id]))
        .filters(filter("default-for-az", &["true"]))
        .send()
        .await
        .map_err(classify)?;
    let mut found: Vec<(&str, &str)> = subnets
        .subnets()
        .iter()
        .filter_map(|s| Some((s.availability_zone().unwrap_or_default(), s.subnet_id()?)))
        .collect();
    found.sort();
    let Some((_, subnet_id)) = found.first() else {
        return Err(invalid(
            "no_default_subnet",
            &format!("the default VPC {vpc_id} in {region} has no default subnet"),
        ));
    };
    Ok(Placement {
        vpc_id: vpc_id.to_owned(),
        subnet_id: (*subnet_id).to_owned(),
    })
}

/// `a.b.c.d/n` or an IPv6 CIDR with a prefix in range.
pub(super) fn valid_cidr(cidr: &str) -> bool {
    let Some((addr, prefix)) = cidr.split_once('/') else {
        return false;
    };
    match (addr.parse::<IpAddr>(), prefix.parse::<u8>()) {
        (Ok(IpAddr::V4(_)), Ok(p)) => p <= 32,
        (Ok(IpAddr::V6(_)), Ok(p)) => p <= 128,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_are_checked() {
        for ok in ["203.0.113.7/32", "0.0.0.0/0", "2001:db8::/48"] {
            assert!(valid_cidr(ok), "{ok}");
        }
        for bad in ["203.0.113.7", "203.0.113.7/33", "x/1", "2001:db8::/129"] {
            assert!(!valid_cidr(bad), "{bad}");
        }
    }
}
