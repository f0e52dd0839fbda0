//! Microsoft.Compute VMs of the fake: the PUT body is checked like ARM does (known members
//! only, a known image, a size sold to the subscription in the location that boots the
//! image's Hyper-V generation, key auth or a complex password, base64
//! `customData`, NICs that exist in the same location and are free), then the VM moves
//! `Creating → Succeeded` (power `starting → running`, then the boot hook) while its
//! `Azure-AsyncOperation` reports `InProgress → Succeeded`; a `Capacity` fault, or a location
//! of `full_regions`, fails the operation with `AllocationFailed` instead (the VM stays,
//! `Failed`, with its NIC, as in Azure). Deletes and operation polls are in `deletes`.
use std::sync::{Arc, Weak};

use base64::Engine as _;
use serde_json::{Value, json};

use super::state::{Inventory, Resource, VmExtra, error};
use super::wire::Target;
use super::{Shared, catalog};
use crate::fakes::BootEvent;
use crate::fakes::edge::{Call, Reply, lock};

const VM_KEYS: [&str; 6] = [
    "location",
    "tags",
    "properties",
    "identity",
    "zones",
    "plan",
];
const IMAGES: [(&str, &str); 2] = [
    ("Canonical", "ubuntu-24_04-lts"),
    ("Canonical", "0001-com-ubuntu-server-jammy"),
];

/// ARM's answer to a size that is not sold (or not to this subscription) in `location`, or
/// that cannot boot the image SKU's Hyper-V generation.
fn check_size(size: &str, location: &str, image_sku: &str) -> Option<Reply> {
    let spec = catalog::find(size).filter(|s| s.sold_in(location));
    let Some(spec) = spec.filter(|s| s.restriction(location).is_none()) else {
        return Some(Reply::json(
            409,
            error(
                "SkuNotAvailable",
                &format!(
                    "The requested VM size {size} is currently not available in location '{location}'. Please try another size or deploy to a different location or different zone."
                ),
            ),
        ));
    };
    let generation = image_generation(image_sku);
    if spec.generations.split(',').any(|g| g == generation) {
        return None;
    }
    let number = &generation[1..];
    Some(bad(
        "BadRequest",
        &format!(
            "The selected VM size '{size}' cannot boot Hypervisor Generation '{number}'. If this was a Create operation please check that the Hypervisor Generation of the Image matches the Hypervisor Generation of the selected VM Size. If this was an Update operation please select a Hypervisor Generation '{number}' VM Size."
        ),
    ))
}

/// The Hyper-V generation of Canonical's image SKUs: `server`, `*-gen2` are V2; `server-gen1`
/// and the older unsuffixed ones (`22_04-lts`) are V1.
fn image_generation(sku: &str) -> &'static str {
    if sku == "server" || sku.ends_with("gen2") {
        "V2"
    } else {
        "V1"
    }
}

pub(crate) fn put_vm(shared: &Arc<Shared>, call: &Call, t: &Target, capacity: bool) -> Reply {
    let b = &call.json;
    let Some(obj) = b.as_object() else {
        return bad("InvalidRequestFormat", "Cannot parse the request.");
    };
    if let Some(k) = obj.keys().find(|k| !VM_KEYS.contains(&k.as_str())) {
        return bad(
            "InvalidRequestContent",
            &format!("Could not find member '{k}' on object of type 'VirtualMachine'."),
        );
    }
    let s = |p: &str| b.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let location = s("/location");
    if !catalog::is_physical(location) {
        return bad(
            "LocationRequired",
            "The location property is required and must be a physical location.",
        );
    }
    let image = (
        s("/properties/storageProfile/imageReference/publisher"),
        s("/properties/storageProfile/imageReference/offer"),
    );
    let sku = s("/properties/storageProfile/imageReference/sku");
    if !IMAGES.contains(&image)
        || sku.is_empty()
        || s("/properties/storageProfile/imageReference/version").is_empty()
    {
        return Reply::json(
            404,
            error(
                "PlatformImageNotFound",
                "The platform image requested was not found.",
            ),
        );
    }
    if let Some(refused) = check_size(s("/properties/hardwareProfile/vmSize"), location, sku) {
        return refused;
    }
    if s("/properties/storageProfile/osDisk/createOption") != "FromImage" {
        return bad(
            "InvalidParameter",
            "osDisk.createOption must be FromImage for a platform image.",
        );
    }
    let user = s("/properties/osProfile/adminUsername");
    let computer = s("/properties/osProfile/computerName");
    if user.is_empty()
        || ["root", "admin", "administrator"].contains(&user)
        || computer.is_empty()
        || computer.len() > 64
    {
        return bad(
            "InvalidParameter",
            "adminUsername and computerName are required (computerName at most 64 characters).",
        );
    }
    let custom = s("/properties/osProfile/customData");
    let Ok(user_data) = base64::engine::general_purpose::STANDARD
        .decode(custom)
        .map(|d| String::from_utf8_lossy(&d).into_owned())
    else {
        return bad("InvalidParameter", "customData must be base64.");
    };
    if custom.len() > 87_380 {
        return bad("InvalidParameter", "customData is larger than 64 KiB.");
    }
    let password = b
        .pointer("/properties/osProfile/adminPassword")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Err(r) = check_auth(b, user, password.as_deref()) {
        return r;
    }
    let nics: Vec<String> = b
        .pointer("/properties/networkProfile/networkInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.get("id").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    if nics.is_empty() {
        return bad(
            "InvalidParameter",
            "At least one network interface is required.",
        );
    }
    let mut inv = lock(&shared.inventory);
    if let Some(existing) = inv.vms.get(&t.id.to_ascii_lowercase()) {
        if existing.password != password {
            return Reply::json(
                409,
                error(
                    "PropertyChangeNotAllowed",
                    "Changing property 'adminPassword' is not allowed.",
                ),
            );
        }
        let body = inv.get(&t.id).map(Resource::render).unwrap_or_default();
        return Reply::json(200, body);
    }
    for nic in &nics {
        match inv.get(nic) {
            None => {
                return Reply::json(
                    400,
                    error(
                        "InvalidResourceReference",
                        &format!(
                            "Resource {nic} referenced by resource {} was not found.",
                            t.id
                        ),
                    ),
                );
            }
            Some(n) if n.location != location => {
                return bad(
                    "InvalidResourceReference",
                    "the network interface is in another location",
                );
            }
            Some(n) if n.properties.get("virtualMachine").is_some() => {
                return bad(
                    "NicInUse",
                    &format!("Network interface {nic} is used by another virtual machine."),
                );
            }
            Some(_) => {}
        }
    }
    let mut props = b.get("properties").cloned().unwrap_or_default();
    if let Some(m) = props
        .pointer_mut("/osProfile")
        .and_then(Value::as_object_mut)
    {
        m.remove("adminPassword");
        m.remove("customData");
    }
    let n = inv.next();
    props["vmId"] = json!(format!("{n:08x}-0000-4000-8000-{:012x}", n * 7919));
    props["provisioningState"] = json!("Creating");
    let disk_name = props
        .pointer("/storageProfile/osDisk/name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("{}_OsDisk_1_{n:032x}", t.name), str::to_owned);
    let disk_id = format!(
        "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Compute/disks/{disk_name}",
        shared.cfg.subscription_id, t.group
    );
    props["storageProfile"]["osDisk"]["managedDisk"]["id"] = json!(disk_id);
    props["storageProfile"]["osDisk"]["osType"] = json!("Linux");
    let tags: std::collections::BTreeMap<String, String> = b
        .get("tags")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    inv.insert(Resource { id: disk_id.clone(), kind: "Microsoft.Compute/disks".into(), name: disk_name, location: location.to_owned(), tags: Default::default(), sku: json!({ "name": "StandardSSD_LRS" }), properties: json!({ "diskSizeGB": 30, "diskState": "Attached", "osType": "Linux", "provisioningState": "Succeeded", "managedBy": t.id }) });
    for nic in &nics {
        if let Some(r) = inv.get_mut(nic) {
            r.properties["virtualMachine"] = json!({ "id": t.id });
        }
    }
    inv.insert(Resource {
        id: t.id.clone(),
        kind: t.kind.to_owned(),
        name: t.name.clone(),
        location: location.to_owned(),
        tags: tags.clone(),
        sku: Value::Null,
        properties: props,
    });
    inv.vms.insert(
        t.id.to_ascii_lowercase(),
        VmExtra {
            power: String::new(),
            user_data,
            password,
            booted: false,
        },
    );
    inv.created_vm_tags.push(tags);
    let op = inv.start_operation(false);
    let body = inv.get(&t.id).map(Resource::render).unwrap_or_default();
    drop(inv);
    let full = shared
        .cfg
        .full_regions
        .iter()
        .any(|l| l.eq_ignore_ascii_case(location));
    spawn_create(shared, t.id.clone(), op.clone(), capacity || full);
    let base = shared.base.get().cloned().unwrap_or_default();
    let url = format!(
        "{base}/subscriptions/{}/providers/Microsoft.Compute/locations/{location}/operations/{op}?api-version=2024-07-01",
        shared.cfg.subscription_id
    );
    Reply::json(201, body)
        .header("azure-asyncoperation", url)
        .header("retry-after", "0")
}

fn check_auth(b: &Value, user: &str, password: Option<&str>) -> Result<(), Reply> {
    let lc = b.pointer("/properties/osProfile/linuxConfiguration");
    let disabled = lc
        .and_then(|l| l.get("disablePasswordAuthentication"))
        .and_then(Value::as_bool)
        == Some(true);
    let keys = lc
        .and_then(|l| l.pointer("/ssh/publicKeys"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let path = format!("/home/{user}/.ssh/authorized_keys");
    let key_ok = |k: &Value| {
        k.get("path").and_then(Value::as_str) == Some(path.as_str())
            && k.get("keyData").and_then(Value::as_str).is_some_and(|d| {
                d.starts_with("ssh-rsa ")
                    || d.starts_with("ssh-ed25519 ")
                    || d.starts_with("ecdsa-")
            })
    };
    if !keys.iter().all(key_ok) {
        return Err(bad(
            "InvalidParameter",
            "each SSH public key needs keyData in OpenSSH format and the path /home/<adminUsername>/.ssh/authorized_keys",
        ));
    }
    if disabled {
        if keys.is_empty() || password.is_some() {
            return Err(bad(
                "InvalidParameter",
                "disablePasswordAuthentication requires SSH public keys and no adminPassword",
            ));
        }
        return Ok(());
    }
    let Some(p) = password else {
        return Err(bad(
            "InvalidParameter",
            "Required parameter 'adminPassword' is missing (null).",
        ));
    };
    let classes = [
        p.chars().any(|c| c.is_ascii_lowercase()),
        p.chars().any(|c| c.is_ascii_uppercase()),
        p.chars().any(|c| c.is_ascii_digit()),
        p.chars().any(|c| !c.is_ascii_alphanumeric()),
    ];
    if !(12..=123).contains(&p.len()) || classes.iter().filter(|c| **c).count() < 3 {
        return Err(bad(
            "InvalidParameter",
            "The supplied password must be between 12-123 characters long and must satisfy at least 3 of password complexity requirements.",
        ));
    }
    Ok(())
}

fn spawn_create(shared: &Arc<Shared>, id: String, op: String, capacity: bool) {
    let weak = Arc::downgrade(shared);
    let step = shared.cfg.state_step;
    shared.spawn(async move {
        tokio::time::sleep(step).await;
        let Some(s) = weak.upgrade() else { return };
        {
            let mut inv = lock(&s.inventory);
            if capacity {
                if let Some(vm) = inv.get_mut(&id) {
                    vm.set_state("Failed");
                }
                inv.finish_operation(&op, Some(("AllocationFailed", "Allocation failed. We do not have sufficient capacity for the requested VM size in this region.")));
                return;
            }
            match inv.get_mut(&id) {
                Some(vm) if vm.state() == "Creating" => vm.set_state("Succeeded"),
                _ => return,
            }
            set_power(&mut inv, &id, "starting");
            inv.finish_operation(&op, None);
        }
        drop(s);
        tokio::time::sleep(step).await;
        boot(&weak, &id);
    });
}

pub(crate) fn set_power(inv: &mut Inventory, id: &str, power: &str) {
    if let Some(x) = inv.vms.get_mut(&id.to_ascii_lowercase()) {
        x.power = power.to_owned();
    }
}

/// `starting → running`, then the boot hook once, outside the lock.
fn boot(weak: &Weak<Shared>, id: &str) {
    let Some(s) = weak.upgrade() else { return };
    let event = {
        let mut inv = lock(&s.inventory);
        let ip = public_ip_of(&inv, id).unwrap_or_default();
        let name = inv.get(id).map(|r| r.name.clone()).unwrap_or_default();
        let Some(x) = inv
            .vms
            .get_mut(&id.to_ascii_lowercase())
            .filter(|x| x.power == "starting")
        else {
            return;
        };
        x.power = "running".into();
        if x.booted {
            return;
        }
        x.booted = true;
        BootEvent {
            server_id: name.clone(),
            name,
            user_data: x.user_data.clone(),
            ipv4: ip,
        }
    };
    if let Some(hook) = &s.cfg.boot_hook {
        hook(event);
    }
}

/// The public address of the VM's first NIC.
pub(crate) fn public_ip_of(inv: &Inventory, vm: &str) -> Option<String> {
    let nic = inv
        .get(vm)?
        .properties
        .pointer("/networkProfile/networkInterfaces/0/id")?
        .as_str()?
        .to_owned();
    let pip = inv
        .get(&nic)?
        .properties
        .pointer("/ipConfigurations/0/properties/publicIPAddress/id")?
        .as_str()?
        .to_owned();
    inv.get(&pip)?
        .properties
        .get("ipAddress")?
        .as_str()
        .map(str::to_owned)
}

/// `properties.instanceView` of a VM.
pub(crate) fn instance_view(inv: &Inventory, vm: &Resource) -> Value {
    let mut statuses = vec![
        json!({ "code": format!("ProvisioningState/{}", vm.state().to_ascii_lowercase()), "level": "Info" }),
    ];
    if let Some(x) = inv
        .vms
        .get(&vm.id.to_ascii_lowercase())
        .filter(|x| !x.power.is_empty())
    {
        statuses.push(json!({ "code": format!("PowerState/{}", x.power), "level": "Info", "displayStatus": format!("VM {}", x.power) }));
    }
    json!({ "computerName": vm.properties.pointer("/osProfile/computerName"), "statuses": statuses })
}

fn bad(code: &str, message: &str) -> Reply {
    Reply::json(400, error(code, message))
}
