//! Microsoft.Network resources of the fake: VNets (a PUT replaces the subnet list, as in
//! ARM: an existing VNet PUT without `subnets` deletes them, or fails with
//! `InUseSubnetCannotBeDeleted`), subnets as child resources, NSGs, Standard/Basic public
//! IPs (addresses assigned at once for Static), and NICs with their references checked.
//! PUTs answer 201/200 with `Azure-AsyncOperation`; deletes are in `deletes`.
use std::sync::Arc;

use serde_json::{Value, json};

use super::state::{Inventory, Resource, address, error};
use super::wire::Target;
use super::{Shared, catalog};
use crate::fakes::edge::{Call, Reply, lock};

pub(crate) fn put(shared: &Arc<Shared>, call: &Call, t: &Target) -> Reply {
    let b = &call.json;
    if !b.is_object() {
        return Reply::json(
            400,
            error("InvalidRequestFormat", "Cannot parse the request."),
        );
    }
    let location = b
        .get("location")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let subnet = t.kind.ends_with("/subnets");
    if !subnet && !catalog::is_physical(&location) {
        return Reply::json(
            400,
            error(
                "LocationNotAvailableForResourceType",
                &format!(
                    "The provided location '{location}' is not available for resource type '{}'.",
                    t.kind
                ),
            ),
        );
    }
    let tags = match b.get("tags").map(|t| serde_json::from_value(t.clone())) {
        None => Default::default(),
        Some(Ok(t)) => t,
        Some(Err(_)) => {
            return Reply::json(
                400,
                error("InvalidRequestContent", "tags must be an object of strings"),
            );
        }
    };
    let mut props = b.get("properties").cloned().unwrap_or_else(|| json!({}));
    let mut inv = lock(&shared.inventory);
    let existed = inv.get(&t.id).is_some();
    let checked = match t.kind {
        "Microsoft.Network/virtualNetworks" => vnet(&mut inv, t, &props),
        "Microsoft.Network/virtualNetworks/subnets" => subnet_props(&inv, t, &props),
        "Microsoft.Network/networkSecurityGroups" => nsg(&props),
        "Microsoft.Network/publicIPAddresses" => public_ip(&mut inv, t, b, &mut props),
        _ => nic(&inv, t, &location, &mut props),
    };
    if let Err(r) = checked {
        return r;
    }
    props.as_object_mut().map(|m| m.remove("subnets"));
    props["provisioningState"] = json!("Succeeded");
    let sku = b.get("sku").cloned().unwrap_or(Value::Null);
    let location = if subnet { String::new() } else { location };
    inv.insert(Resource {
        id: t.id.clone(),
        kind: t.kind.to_owned(),
        name: t.name.clone(),
        location: location.clone(),
        tags,
        sku,
        properties: props,
    });
    let op = inv.start_operation(true);
    let mut body = inv.get(&t.id).map(Resource::render).unwrap_or_default();
    body["properties"]["provisioningState"] = json!("Updating");
    drop(inv);
    let base = shared.base.get().cloned().unwrap_or_default();
    let loc = if location.is_empty() {
        "westeurope".to_owned()
    } else {
        location
    };
    let url = format!(
        "{base}/subscriptions/{}/providers/Microsoft.Network/locations/{loc}/operations/{op}?api-version=2023-09-01",
        shared.cfg.subscription_id
    );
    Reply::json(if existed { 200 } else { 201 }, body)
        .header("azure-asyncoperation", url)
        .header("retry-after", "0")
}

fn vnet(inv: &mut Inventory, t: &Target, props: &Value) -> Result<(), Reply> {
    let prefixes = props
        .pointer("/addressSpace/addressPrefixes")
        .and_then(Value::as_array);
    if prefixes.is_none_or(|p| p.is_empty() || !p.iter().all(|x| x.as_str().is_some_and(is_cidr))) {
        return Err(Reply::json(
            400,
            error(
                "InvalidAddressPrefixFormat",
                "addressSpace.addressPrefixes must hold CIDR ranges",
            ),
        ));
    }
    // ARM replaces the subnet list with the body's (none given: none kept).
    let wanted: Vec<Value> = props
        .get("subnets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let keep: Vec<String> = wanted
        .iter()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .map(str::to_ascii_lowercase)
        .collect();
    let existing: Vec<Resource> = subnet_resources(inv, &t.id);
    for s in &existing {
        if !keep.contains(&s.name.to_ascii_lowercase()) && !inv.referrers(&s.id).is_empty() {
            return Err(Reply::json(
                400,
                error(
                    "InUseSubnetCannotBeDeleted",
                    &format!("Subnet {} is in use and cannot be deleted.", s.name),
                ),
            ));
        }
    }
    for s in existing
        .iter()
        .filter(|s| !keep.contains(&s.name.to_ascii_lowercase()))
    {
        inv.remove(&s.id);
    }
    for s in &wanted {
        let (Some(name), Some(p)) = (s.get("name").and_then(Value::as_str), s.get("properties"))
        else {
            continue;
        };
        let mut p = p.clone();
        p["provisioningState"] = json!("Succeeded");
        let id = format!("{}/subnets/{name}", t.id);
        inv.insert(Resource {
            id,
            kind: "Microsoft.Network/virtualNetworks/subnets".into(),
            name: name.to_owned(),
            location: String::new(),
            tags: Default::default(),
            sku: Value::Null,
            properties: p,
        });
    }
    Ok(())
}

fn subnet_props(inv: &Inventory, t: &Target, props: &Value) -> Result<(), Reply> {
    if t.parent.as_deref().is_none_or(|p| inv.get(p).is_none()) {
        return Err(Reply::json(
            404,
            error(
                "ParentResourceNotFound",
                "the virtual network does not exist",
            ),
        ));
    }
    match props.get("addressPrefix").and_then(Value::as_str) {
        Some(p) if is_cidr(p) => Ok(()),
        _ => Err(Reply::json(
            400,
            error(
                "InvalidAddressPrefixFormat",
                "addressPrefix must be a CIDR range",
            ),
        )),
    }
}

fn nsg(props: &Value) -> Result<(), Reply> {
    for rule in props
        .get("securityRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let p = rule.get("properties").cloned().unwrap_or_default();
        let priority = p.get("priority").and_then(Value::as_u64).unwrap_or(0);
        let fields_ok = [
            "direction",
            "access",
            "protocol",
            "sourceAddressPrefix",
            "destinationPortRange",
        ]
        .iter()
        .all(|k| p.get(*k).and_then(Value::as_str).is_some());
        if rule.get("name").and_then(Value::as_str).is_none()
            || !(100..=4096).contains(&priority)
            || !fields_ok
        {
            return Err(Reply::json(
                400,
                error(
                    "SecurityRuleInvalid",
                    "a security rule needs a name, a priority of 100 to 4096, direction, access, protocol, source and port",
                ),
            ));
        }
    }
    Ok(())
}

fn public_ip(
    inv: &mut Inventory,
    t: &Target,
    body: &Value,
    props: &mut Value,
) -> Result<(), Reply> {
    let sku = body
        .pointer("/sku/name")
        .and_then(Value::as_str)
        .unwrap_or("Basic");
    let method = props
        .get("publicIPAllocationMethod")
        .and_then(Value::as_str)
        .unwrap_or("Dynamic");
    if sku == "Standard" && method != "Static" {
        return Err(Reply::json(
            400,
            error(
                "StandardSkuPublicIPAddressesCannotBeDynamic",
                "Standard sku publicIp addresses must use Static allocation",
            ),
        ));
    }
    let existing = inv
        .get(&t.id)
        .and_then(|r| r.properties.get("ipAddress").cloned());
    let ip = match existing {
        Some(ip) => ip,
        None => json!(address(inv.next())),
    };
    props["ipAddress"] = ip;
    Ok(())
}

fn nic(inv: &Inventory, t: &Target, location: &str, props: &mut Value) -> Result<(), Reply> {
    let configs = props
        .get("ipConfigurations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if configs.is_empty() {
        return Err(Reply::json(
            400,
            error(
                "InvalidRequestFormat",
                "a network interface needs an IP configuration",
            ),
        ));
    }
    let reference = |v: Option<&Value>, what: &str| -> Result<Option<String>, Reply> {
        let Some(id) = v.and_then(|r| r.get("id")).and_then(Value::as_str) else {
            return Ok(None);
        };
        if inv.get(id).is_none() {
            return Err(Reply::json(
                400,
                error(
                    "InvalidResourceReference",
                    &format!(
                        "Resource {id} referenced by resource {} was not found ({what}).",
                        t.id
                    ),
                ),
            ));
        }
        Ok(Some(id.to_owned()))
    };
    for c in &configs {
        let p = c.get("properties").cloned().unwrap_or_default();
        if reference(p.get("subnet"), "subnet")?.is_none() {
            return Err(Reply::json(
                400,
                error("InvalidRequestFormat", "an IP configuration needs a subnet"),
            ));
        }
        if let Some(pip) = reference(p.get("publicIPAddress"), "public IP")? {
            let used_elsewhere = inv
                .referrers(&pip)
                .iter()
                .any(|r| !r.eq_ignore_ascii_case(&t.id));
            if used_elsewhere {
                return Err(Reply::json(
                    400,
                    error(
                        "PublicIPAddressInUse",
                        "the public IP address is in use by another resource",
                    ),
                ));
            }
            if inv.get(&pip).is_some_and(|r| r.location != location) {
                return Err(Reply::json(
                    400,
                    error(
                        "InvalidResourceReference",
                        "the public IP address is in another location",
                    ),
                ));
            }
        }
    }
    reference(props.get("networkSecurityGroup"), "network security group")?;
    if let Some(vm) = inv
        .get(&t.id)
        .and_then(|r| r.properties.get("virtualMachine").cloned())
    {
        props["virtualMachine"] = vm;
    }
    let n = t
        .name
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    if let Some(first) = props.pointer_mut("/ipConfigurations/0/properties") {
        first["privateIPAddress"] = json!(format!("10.60.0.{}", 4 + n % 250));
    }
    Ok(())
}

/// The subnets of VNet `vnet`, rendered.
pub(crate) fn subnets_of(inv: &Inventory, vnet: &str) -> Vec<Value> {
    subnet_resources(inv, vnet)
        .iter()
        .map(Resource::render)
        .collect()
}

pub(crate) fn subnet_resources(inv: &Inventory, vnet: &str) -> Vec<Resource> {
    let prefix = format!("{}/subnets/", vnet.to_ascii_lowercase());
    inv.resources
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, r)| r.clone())
        .collect()
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    ip.parse::<std::net::Ipv4Addr>().is_ok() && bits.parse::<u8>().is_ok_and(|b| b <= 32)
}
