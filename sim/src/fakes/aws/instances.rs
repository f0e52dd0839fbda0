//! The instance life cycle of the fake: `RunInstances` (validated like EC2: known image and
//! type, subnet, groups of the subnet's VPC, key pair, one network interface with a public
//! IP, tags on the instance, its volume and its interface, base64 user-data of at most
//! 16 KiB, and `ClientToken` idempotency: the same token returns the same instance, other
//! parameters with it are `IdempotentParameterMismatch`; a type the region does not offer,
//! or a zone told to refuse, answers `Unsupported` / `InsufficientInstanceCapacity`); `pending → running` after one
//! state step (then the boot hook gets the decoded user-data); `DescribeInstances`; and
//! `TerminateInstances`: `shutting-down → terminated`, when the interface and the volume
//! are released.
use std::sync::{Arc, Weak};

use base64::Engine as _;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::catalog::{self, IMAGES};
use super::render;
use super::state::{Eni, Instance, Inventory, Volume};
use super::types;
use super::wire::{Call, Handled, Shared, bad, passes};
use super::xml::Xml;
use crate::fakes::BootEvent;
use crate::fakes::edge::lock;

/// The largest user-data EC2 accepts (before base64).
const MAX_USER_DATA: usize = 16 * 1024;

pub(crate) fn run(shared: &Arc<Shared>, inv: &mut Inventory, call: &Call) -> Handled {
    let p = &call.params;
    let token = p.get("ClientToken").unwrap_or_default().to_owned();
    let fingerprint = launch_fingerprint(call);
    if !token.is_empty()
        && let Some(existing) = inv
            .instances
            .values()
            .find(|i| i.region == call.region && i.client_token == token)
    {
        if launch_fingerprint_of(existing) != fingerprint {
            return Err(bad(
                "IdempotentParameterMismatch",
                "The client token you have provided is associated with a resource that is already deleted or has different parameters.",
            ));
        }
        return Ok(reservation(
            inv,
            std::slice::from_ref(&existing.id),
            &shared.account_id,
        ));
    }
    if p.get("MinCount") != Some("1") || p.get("MaxCount") != Some("1") {
        return Err(bad(
            "InvalidParameterValue",
            "this fake launches exactly one instance per call (MinCount = MaxCount = 1)",
        ));
    }
    let image = p.str("ImageId").unwrap_or_default();
    if !IMAGES
        .iter()
        .any(|i| i.id == image && i.state == "available")
    {
        return Err(bad(
            "InvalidAMIID.NotFound",
            &format!("The image id '[{image}]' does not exist"),
        ));
    }
    let instance_type = p.str("InstanceType").unwrap_or("m1.small");
    if catalog::instance_type(instance_type).is_none() {
        return Err(bad(
            "InvalidParameterValue",
            &format!("Invalid value '{instance_type}' for InstanceType."),
        ));
    }
    let user_data = match p.str("UserData") {
        None => String::new(),
        Some(b64) => match base64::engine::general_purpose::STANDARD.decode(b64) {
            Ok(bytes) if bytes.len() <= MAX_USER_DATA => {
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Ok(_) => {
                return Err(bad(
                    "InvalidParameterValue",
                    "User data is limited to 16384 bytes",
                ));
            }
            Err(_) => {
                return Err(bad(
                    "InvalidUserData.Malformed",
                    "User data must be base64 encoded",
                ));
            }
        },
    };
    let nic = "NetworkInterface.1";
    let subnet_id = p
        .str(&format!("{nic}.SubnetId"))
        .or(p.str("SubnetId"))
        .unwrap_or_default()
        .to_owned();
    let Some(subnet) = inv
        .subnets
        .get(&subnet_id)
        .filter(|s| s.region == call.region)
        .cloned()
    else {
        return Err(bad(
            "InvalidSubnetID.NotFound",
            &format!("The subnet ID '{subnet_id}' does not exist"),
        ));
    };
    let mut groups = p.list(&format!("{nic}.SecurityGroupId"));
    groups.extend(p.list("SecurityGroupId"));
    for g in &groups {
        if inv.groups.get(g).is_none_or(|x| x.vpc_id != subnet.vpc_id) {
            return Err(bad(
                "InvalidGroup.NotFound",
                &format!(
                    "The security group '{g}' does not exist in VPC '{}'",
                    subnet.vpc_id
                ),
            ));
        }
    }
    if groups.is_empty() {
        groups.extend(
            inv.groups
                .values()
                .filter(|g| g.vpc_id == subnet.vpc_id && g.name == "default")
                .map(|g| g.id.clone()),
        );
    }
    let key_name = p.str("KeyName").map(str::to_owned);
    if let Some(k) = &key_name
        && !inv
            .keys
            .values()
            .any(|x| x.region == call.region && &x.name == k)
    {
        return Err(bad(
            "InvalidKeyPair.NotFound",
            &format!("The key pair '{k}' does not exist"),
        ));
    }
    for t in p.tagged_types() {
        if !matches!(t.as_str(), "instance" | "volume" | "network-interface") {
            return Err(bad(
                "InvalidParameterValue",
                &format!("'{t}' is not a valid taggable resource type for this operation."),
            ));
        }
    }
    if let Some(refused) = types::launch_refusal(inv, call, &subnet, instance_type) {
        return Err(refused);
    }
    let n = inv.serial();
    let public = p
        .get(&format!("{nic}.AssociatePublicIpAddress"))
        .map_or(subnet.default_for_az, |v| v == "true");
    let instance = Instance {
        id: inv.id("i"),
        region: call.region.clone(),
        reservation: inv.id("r"),
        image_id: image.to_owned(),
        instance_type: instance_type.to_owned(),
        state: "pending",
        key_name,
        subnet_id: subnet.id.clone(),
        vpc_id: subnet.vpc_id.clone(),
        zone: subnet.zone.clone(),
        private_ip: format!("172.31.{}.{}", (n >> 8) & 0xff, n & 0xff),
        public_ip: public.then(|| format!("198.51.100.{}", n % 250 + 2)),
        groups: groups.clone(),
        eni: inv.id("eni"),
        volume: inv.id("vol"),
        root_device: p
            .str("BlockDeviceMapping.1.DeviceName")
            .unwrap_or("/dev/sda1")
            .to_owned(),
        user_data,
        client_token: token,
        http_tokens: p
            .str("MetadataOptions.HttpTokens")
            .unwrap_or("optional")
            .to_owned(),
        tags: p.tags_for("instance"),
        launched: now(),
    };
    let size = p
        .str("BlockDeviceMapping.1.Ebs.VolumeSize")
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let volume_type = p
        .str("BlockDeviceMapping.1.Ebs.VolumeType")
        .unwrap_or("gp2")
        .to_owned();
    inv.enis.insert(
        instance.eni.clone(),
        Eni {
            id: instance.eni.clone(),
            region: call.region.clone(),
            instance: instance.id.clone(),
            groups,
            tags: p.tags_for("network-interface"),
        },
    );
    inv.volumes.insert(
        instance.volume.clone(),
        Volume {
            size_gb: size,
            volume_type,
            tags: p.tags_for("volume"),
        },
    );
    inv.launched_tags.push(instance.tags.clone());
    let id = instance.id.clone();
    inv.instances.insert(id.clone(), instance);
    schedule(shared, id.clone(), "running");
    Ok(reservation(inv, &[id], &shared.account_id))
}

/// What must match for a repeated `ClientToken` to be the same request.
fn launch_fingerprint(call: &Call) -> (String, String, String) {
    let p = &call.params;
    (
        p.get("ImageId").unwrap_or_default().to_owned(),
        p.get("InstanceType").unwrap_or_default().to_owned(),
        p.get("NetworkInterface.1.SubnetId")
            .or(p.get("SubnetId"))
            .unwrap_or_default()
            .to_owned(),
    )
}

fn launch_fingerprint_of(i: &Instance) -> (String, String, String) {
    (
        i.image_id.clone(),
        i.instance_type.clone(),
        i.subnet_id.clone(),
    )
}

fn reservation(inv: &Inventory, ids: &[String], owner: &str) -> Vec<Xml> {
    let first = ids.first().and_then(|id| inv.instances.get(id));
    vec![
        Xml::text(
            "reservationId",
            first.map(|i| i.reservation.as_str()).unwrap_or_default(),
        ),
        Xml::text("ownerId", owner),
        Xml::items("groupSet", vec![]),
        Xml::items(
            "instancesSet",
            ids.iter()
                .filter_map(|id| inv.instances.get(id))
                .map(|i| render::instance_xml(inv, i, owner))
                .collect(),
        ),
    ]
}

pub(crate) fn describe(inv: &Inventory, call: &Call, owner: &str) -> Handled {
    let ids = call.params.list("InstanceId");
    if let Some(missing) = ids.iter().find(|id| {
        inv.instances
            .get(*id)
            .is_none_or(|i| i.region != call.region)
    }) {
        let code = if missing.starts_with("i-") {
            "InvalidInstanceID.NotFound"
        } else {
            "InvalidInstanceID.Malformed"
        };
        return Err(bad(
            code,
            &format!("The instance ID '{missing}' does not exist"),
        ));
    }
    let filters = call.params.filters();
    let mut reservations = Vec::new();
    for i in inv
        .instances
        .values()
        .filter(|i| i.region == call.region && (ids.is_empty() || ids.contains(&i.id)))
    {
        if passes(&filters, &i.tags, |n| match n {
            "instance-state-name" => Some(vec![i.state.to_owned()]),
            "instance-id" => Some(vec![i.id.clone()]),
            "client-token" => Some(vec![i.client_token.clone()]),
            "instance.group-id" | "group-id" => Some(i.groups.clone()),
            "subnet-id" => Some(vec![i.subnet_id.clone()]),
            "vpc-id" => Some(vec![i.vpc_id.clone()]),
            "key-name" => Some(i.key_name.clone().into_iter().collect()),
            _ => None,
        })? {
            reservations.push(reservation(inv, std::slice::from_ref(&i.id), owner));
        }
    }
    Ok(vec![Xml::items("reservationSet", reservations)])
}

pub(crate) fn terminate(shared: &Arc<Shared>, inv: &mut Inventory, call: &Call) -> Handled {
    let ids = call.params.list("InstanceId");
    if ids.is_empty() {
        return Err(bad(
            "MissingParameter",
            "The request must contain the parameter InstanceId",
        ));
    }
    if let Some(missing) = ids.iter().find(|id| {
        inv.instances
            .get(*id)
            .is_none_or(|i| i.region != call.region)
    }) {
        return Err(bad(
            "InvalidInstanceID.NotFound",
            &format!("The instance ID '{missing}' does not exist"),
        ));
    }
    let mut items = Vec::new();
    for id in &ids {
        let Some(i) = inv.instances.get_mut(id) else {
            continue;
        };
        let previous = i.state;
        if !matches!(previous, "shutting-down" | "terminated") {
            i.state = "shutting-down";
            schedule(shared, id.clone(), "terminated");
        }
        items.push(vec![
            Xml::text("instanceId", id),
            Xml::node("currentState", render::state_xml(i.state)),
            Xml::node("previousState", render::state_xml(previous)),
        ]);
    }
    Ok(vec![Xml::items("instancesSet", items)])
}

/// Moves instance `id` to `to` after one state step.
fn schedule(shared: &Arc<Shared>, id: String, to: &'static str) {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let step = shared.state_step;
    let task = tokio::spawn(async move {
        tokio::time::sleep(step).await;
        let Some(shared) = weak.upgrade() else { return };
        let boot = {
            let mut inv = lock(&shared.inventory);
            let Some(i) = inv.instances.get_mut(&id) else {
                return;
            };
            match (i.state, to) {
                ("pending", "running") => {
                    i.state = "running";
                    Some(BootEvent {
                        server_id: i.id.clone(),
                        name: i.tags.get("Name").cloned().unwrap_or_else(|| i.id.clone()),
                        user_data: i.user_data.clone(),
                        ipv4: i.public_ip.clone().unwrap_or_default(),
                    })
                }
                (_, "terminated") => {
                    i.state = "terminated";
                    let (eni, volume) = (i.eni.clone(), i.volume.clone());
                    inv.enis.remove(&eni);
                    inv.volumes.remove(&volume);
                    None
                }
                _ => None,
            }
        };
        if let (Some(event), Some(hook)) = (boot, shared.boot_hook.as_ref()) {
            hook(event);
        }
    });
    lock(&shared.tasks).push(task.abort_handle());
}

fn now() -> String {
    OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default()
}
