//! Where an instance may go: the operator's subnet for the region (its VPC), else every
//! default subnet of the default VPC, one per availability zone, in zone order (the same
//! order on every attempt), so a launch refused for capacity in one zone moves on to the
//! next.
use std::net::IpAddr;

use super::client::Clients;
use super::errors::{classify, invalid};
use super::tags::filter;
use crate::ProviderError;

/// A subnet an instance may be launched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Subnet {
    pub(super) id: String,
    /// Its availability zone (`eu-west-1a`).
    pub(super) zone: String,
}

/// The VPC of a new instance and the subnets to try, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    pub(super) vpc_id: String,
    /// Never empty.
    pub(super) subnets: Vec<Subnet>,
}

/// The operator's subnet for `region` alone, else the default VPC's default subnets by zone.
pub(super) async fn placement(c: &Clients, region: &str) -> Result<Placement, ProviderError> {
    match c.settings.subnets.get(region) {
        Some(subnet_id) => named_subnet(c, region, subnet_id).await,
        None => default_subnets(c, region).await,
    }
}

/// The operator-named subnet: only that one is tried (its zone is the operator's choice).
async fn named_subnet(
    c: &Clients,
    region: &str,
    subnet_id: &str,
) -> Result<Placement, ProviderError> {
    let out = c
        .ec2(region)
        .await
        .describe_subnets()
        .subnet_ids(subnet_id)
        .send()
        .await
        .map_err(classify)?;
    let found = out.subnets().first();
    let Some(vpc) = found.and_then(|s| s.vpc_id()) else {
        return Err(invalid(
            "subnet_not_found",
            &format!("the configured subnet {subnet_id} does not exist in {region}"),
        ));
    };
    Ok(Placement {
        vpc_id: vpc.to_owned(),
        subnets: vec![Subnet {
            id: subnet_id.to_owned(),
            zone: found
                .and_then(|s| s.availability_zone())
                .unwrap_or_default()
                .to_owned(),
        }],
    })
}

/// The default VPC and its default subnets, ordered by zone then id.
async fn default_subnets(c: &Clients, region: &str) -> Result<Placement, ProviderError> {
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
    let out = c
        .ec2(region)
        .await
        .describe_subnets()
        .filters(filter("vpc-id", &[vpc_id]))
        .filters(filter("default-for-az", &["true"]))
        .send()
        .await
        .map_err(classify)?;
    let mut subnets: Vec<Subnet> = out
        .subnets()
        .iter()
        .filter_map(|s| {
            Some(Subnet {
                id: s.subnet_id()?.to_owned(),
                zone: s.availability_zone().unwrap_or_default().to_owned(),
            })
        })
        .collect();
    subnets.sort_by(|a, b| a.zone.cmp(&b.zone).then(a.id.cmp(&b.id)));
    if subnets.is_empty() {
        return Err(invalid(
            "no_default_subnet",
            &format!("the default VPC {vpc_id} in {region} has no default subnet"),
        ));
    }
    Ok(Placement {
        vpc_id: vpc_id.to_owned(),
        subnets,
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
