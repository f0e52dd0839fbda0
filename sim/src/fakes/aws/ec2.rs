//! EC2 actions of the fake, other than the instance life cycle (`instances.rs`) and the
//! instance types (`types.rs`): regions, images, VPCs and subnets, security groups and their ingress rules, key pairs and network
//! interfaces, with EC2's filters (`tag:KEY`, globs) and error codes.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::catalog::{self, IMAGES, REGIONS};
use super::groups;
use super::instances;
use super::render;
use super::state::Inventory;
use super::types;
use super::wire::{Call, Handled, Reply, Shared, bad, one, passes};
use super::xml::{self, Xml};
use crate::fakes::edge::lock;

/// Dispatches one EC2 action.
pub(crate) fn handle(shared: &Arc<Shared>, call: &Call) -> Reply {
    match REGIONS.iter().find(|r| r.0 == call.region) {
        None => {
            return Reply::ec2_error(
                401,
                "AuthFailure",
                "Credential should be scoped to a valid region.",
            );
        }
        Some((_, false)) => {
            return Reply::ec2_error(
                401,
                "OptInRequired",
                "You are not subscribed to this service in this region.",
            );
        }
        Some(_) => {}
    }
    let mut inv = lock(&shared.inventory);
    inv.ensure_region(&call.region);
    let owner = shared.account_id.as_str();
    let result = match call.action.as_str() {
        "DescribeRegions" => Ok(describe_regions(call)),
        "DescribeImages" => describe_images(call),
        "DescribeVpcs" => describe_vpcs(&inv, call),
        "DescribeSubnets" => describe_subnets(&inv, call),
        "DescribeInstanceTypes" => types::describe_types(call, shared.page_limit),
        "DescribeInstanceTypeOfferings" => types::describe_offerings(&inv, call, shared.page_limit),
        "CreateSecurityGroup" => groups::create_group(&mut inv, call),
        "DescribeSecurityGroups" => groups::describe_groups(&inv, call, owner),
        "AuthorizeSecurityGroupIngress" => groups::change_ingress(&mut inv, call, true),
        "RevokeSecurityGroupIngress" => groups::change_ingress(&mut inv, call, false),
        "DeleteSecurityGroup" => groups::delete_group(&mut inv, call),
        "ImportKeyPair" => groups::import_key(&mut inv, call),
        "DescribeKeyPairs" => groups::describe_keys(&inv, call),
        "DeleteKeyPair" => Ok(groups::delete_key(&mut inv, call)),
        "DescribeNetworkInterfaces" => describe_enis(&inv, call, owner),
        "RunInstances" => instances::run(shared, &mut inv, call),
        "DescribeInstances"
            if inv.stale_describes > 0 && call.params.list("InstanceId").is_empty() =>
        {
            // EC2's eventual consistency: a launch is not yet seen by every reader.
            inv.stale_describes -= 1;
            Ok(vec![Xml::items("reservationSet", Vec::new())])
        }
        "DescribeInstances" => instances::describe(&inv, call, owner),
        "TerminateInstances" => instances::terminate(shared, &mut inv, call),
        other => Err(Reply::ec2_error(
            400,
            "InvalidAction",
            &format!("The action {other} is not valid for this web service."),
        )),
    };
    match result {
        Ok(children) => Reply::ok(xml::ec2_response(&call.action, &call.request_id, children)),
        Err(reply) => reply,
    }
}

fn describe_regions(call: &Call) -> Vec<Xml> {
    let names = call.params.list("RegionName");
    let all = call.params.flag("AllRegions");
    let items = REGIONS
        .iter()
        .filter(|(r, opted)| (all || *opted) && (names.is_empty() || names.iter().any(|n| n == r)))
        .map(|(r, opted)| {
            vec![
                Xml::text("regionName", r),
                Xml::text("regionEndpoint", format!("ec2.{r}.amazonaws.com")),
                Xml::text(
                    "optInStatus",
                    if *opted {
                        "opt-in-not-required"
                    } else {
                        "not-opted-in"
                    },
                ),
            ]
        })
        .collect();
    vec![Xml::items("regionInfo", items)]
}

fn describe_images(call: &Call) -> Handled {
    let ids = call.params.list("ImageId");
    let owners = call.params.list("Owner");
    let filters = call.params.filters();
    for id in &ids {
        if !id.starts_with("ami-") {
            return Err(bad(
                "InvalidAMIID.Malformed",
                &format!("Invalid id: \"{id}\""),
            ));
        }
        if !IMAGES.iter().any(|i| i.id == id) {
            return Err(bad(
                "InvalidAMIID.NotFound",
                &format!("The image id '[{id}]' does not exist"),
            ));
        }
    }
    let mut items = Vec::new();
    for image in IMAGES
        .iter()
        .filter(|i| ids.is_empty() || ids.iter().any(|id| id == i.id))
    {
        if !owners.is_empty() && !owners.iter().any(|o| o == image.owner) {
            continue;
        }
        let ok = passes(&filters, &BTreeMap::new(), |name| match name {
            "name" => one(image.name),
            "state" => one(image.state),
            "architecture" => one(image.architecture),
            "virtualization-type" => one("hvm"),
            "owner-id" => one(image.owner),
            "image-id" => one(image.id),
            "root-device-type" => one("ebs"),
            _ => None,
        })?;
        if ok {
            items.push(catalog::image_xml(image));
        }
    }
    Ok(vec![Xml::items("imagesSet", items)])
}

fn describe_vpcs(inv: &Inventory, call: &Call) -> Handled {
    let ids = call.params.list("VpcId");
    let filters = call.params.filters();
    let mut items = Vec::new();
    for v in inv
        .vpcs
        .values()
        .filter(|v| v.region == call.region && (ids.is_empty() || ids.contains(&v.id)))
    {
        if passes(&filters, &BTreeMap::new(), |n| match n {
            "is-default" => one(&v.is_default.to_string()),
            "vpc-id" => one(&v.id),
            "state" => one("available"),
            _ => None,
        })? {
            items.push(vec![
                Xml::text("vpcId", &v.id),
                Xml::text("state", "available"),
                Xml::text(
                    "cidrBlock",
                    if v.is_default {
                        "172.31.0.0/16"
                    } else {
                        "10.20.0.0/16"
                    },
                ),
                Xml::text("isDefault", v.is_default),
            ]);
        }
    }
    Ok(vec![Xml::items("vpcSet", items)])
}

fn describe_subnets(inv: &Inventory, call: &Call) -> Handled {
    let ids = call.params.list("SubnetId");
    if let Some(missing) = ids
        .iter()
        .find(|id| inv.subnets.get(*id).is_none_or(|s| s.region != call.region))
    {
        return Err(bad(
            "InvalidSubnetID.NotFound",
            &format!("The subnet ID '{missing}' does not exist"),
        ));
    }
    let filters = call.params.filters();
    let mut items = Vec::new();
    for s in inv
        .subnets
        .values()
        .filter(|s| s.region == call.region && (ids.is_empty() || ids.contains(&s.id)))
    {
        if passes(&filters, &BTreeMap::new(), |n| match n {
            "vpc-id" => one(&s.vpc_id),
            "default-for-az" | "defaultForAz" => one(&s.default_for_az.to_string()),
            "availability-zone" => one(&s.zone),
            "subnet-id" => one(&s.id),
            _ => None,
        })? {
            items.push(vec![
                Xml::text("subnetId", &s.id),
                Xml::text("state", "available"),
                Xml::text("vpcId", &s.vpc_id),
                Xml::text("cidrBlock", &s.cidr),
                Xml::text("availableIpAddressCount", 4091),
                Xml::text("availabilityZone", &s.zone),
                Xml::text("defaultForAz", s.default_for_az),
                Xml::text("mapPublicIpOnLaunch", s.default_for_az),
            ]);
        }
    }
    Ok(vec![Xml::items("subnetSet", items)])
}

fn describe_enis(inv: &Inventory, call: &Call, owner: &str) -> Handled {
    let ids = call.params.list("NetworkInterfaceId");
    if let Some(missing) = ids
        .iter()
        .find(|id| inv.enis.get(*id).is_none_or(|e| e.region != call.region))
    {
        return Err(bad(
            "InvalidNetworkInterfaceID.NotFound",
            &format!("The networkInterface ID '{missing}' does not exist"),
        ));
    }
    let filters = call.params.filters();
    let mut items = Vec::new();
    for e in inv
        .enis
        .values()
        .filter(|e| e.region == call.region && (ids.is_empty() || ids.contains(&e.id)))
    {
        if passes(&filters, &e.tags, |n| match n {
            "group-id" => Some(e.groups.clone()),
            "attachment.instance-id" => one(&e.instance),
            "network-interface-id" => one(&e.id),
            "status" => one("in-use"),
            _ => None,
        })? {
            items.push(render::eni_xml(inv, e, owner));
        }
    }
    Ok(vec![Xml::items("networkInterfaceSet", items)])
}
