//! Instances of the fake project: insert validated like the API (RFC 1035 name unique in the
//! zone, a machine type of that zone, one boot disk from a known image family, the default
//! network with `ONE_TO_ONE_NAT`, metadata items, label syntax), the life cycle
//! `PROVISIONING → STAGING → RUNNING` (the insert operation is `DONE` at `STAGING`, the
//! boot hook runs at `RUNNING` with the `user-data` metadata value), a `Capacity` fault
//! or a zone of `full_regions` failing the operation with `ZONE_RESOURCE_POOL_EXHAUSTED`
//! (the instance is gone, as in Compute Engine), and delete through
//! `STOPPING`. Reads and lists are in `listing`.
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use serde_json::Value;

use super::state::{Instance, error, nat_ip};
use super::wire::{not_found, operation, remember, valid_name};
use super::{Shared, catalog};
use crate::fakes::BootEvent;
use crate::fakes::edge::{Call, Reply, lock};

const IMAGES: [&str; 2] = [
    "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
    "projects/debian-cloud/global/images/family/debian-12",
];
const FIELDS: [&str; 10] = [
    "name",
    "machineType",
    "disks",
    "networkInterfaces",
    "metadata",
    "labels",
    "tags",
    "description",
    "scheduling",
    "serviceAccounts",
];

pub(crate) fn insert(shared: &Arc<Shared>, call: &Call, zone: &str, capacity: bool) -> Reply {
    if !catalog::zone_exists(zone) {
        return not_found(&format!("projects/{}/zones/{zone}", shared.cfg.project_id));
    }
    let b = &call.json;
    let (name, labels) = match validate(b, zone) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let key = format!("{zone}/{name}");
    let mut inv = lock(&shared.inventory);
    if inv.instances.contains_key(&key) {
        return Reply::json(
            409,
            error(
                409,
                "alreadyExists",
                &format!(
                    "The resource 'projects/{}/zones/{zone}/instances/{name}' already exists",
                    shared.cfg.project_id
                ),
            ),
        );
    }
    let id = inv.next();
    inv.instances.insert(
        key.clone(),
        Instance {
            id,
            name: name.clone(),
            zone: zone.to_owned(),
            status: "PROVISIONING".into(),
            body: b.clone(),
            labels: labels.clone(),
            nat_ip: String::new(),
            booted: false,
        },
    );
    inv.created_labels.push(labels);
    let op = inv.start(
        zone,
        "insert",
        &format!("zones/{zone}/instances/{name}"),
        false,
    );
    drop(inv);
    remember(shared, call, &op);
    let full = catalog::zone_is_full(&shared.cfg.full_regions, zone);
    spawn_life_cycle(shared, key, op.clone(), capacity || full);
    operation(shared, &op, false)
}

fn validate(b: &Value, zone: &str) -> Result<(String, BTreeMap<String, String>), Reply> {
    let invalid = |field: &str, why: &str| {
        Reply::json(
            400,
            error(
                400,
                "invalid",
                &format!("Invalid value for field 'resource.{field}': {why}"),
            ),
        )
    };
    let Some(obj) = b.as_object() else {
        return Err(invalid("", "the body must be an Instance"));
    };
    if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Reply::json(
            400,
            error(
                400,
                "invalid",
                &format!(
                    "Invalid JSON payload received. Unknown name \"{k}\" at 'resource': Cannot find field."
                ),
            ),
        ));
    }
    let s = |p: &str| b.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let name = s("/name");
    if !valid_name(name) {
        return Err(invalid(
            "name",
            "must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
        ));
    }
    let machine = s("/machineType");
    let short = machine.rsplit('/').next().unwrap_or_default();
    if !machine.ends_with(&format!("zones/{zone}/machineTypes/{short}"))
        || !catalog::machine_type_exists(short)
    {
        return Err(invalid(
            "machineType",
            "Machine type with name is not found or is not in the instance's zone.",
        ));
    }
    let disks = b
        .get("disks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let boot: Vec<&Value> = disks
        .iter()
        .filter(|d| d.get("boot").and_then(Value::as_bool) == Some(true))
        .collect();
    if boot.len() != 1
        || !boot[0]
            .pointer("/initializeParams/sourceImage")
            .and_then(Value::as_str)
            .is_some_and(|i| IMAGES.contains(&i))
    {
        return Err(invalid(
            "disks",
            "exactly one boot disk with a known source image is required",
        ));
    }
    if let Some(size) = boot[0].pointer("/initializeParams/diskSizeGb")
        && !size
            .as_str()
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|n| n >= 10))
    {
        return Err(invalid(
            "disks[0].initializeParams.diskSizeGb",
            "must be an int64 string of at least 10",
        ));
    }
    let nic = b.pointer("/networkInterfaces/0");
    let network_ok = nic
        .and_then(|n| n.get("network"))
        .and_then(Value::as_str)
        .is_some_and(|n| n.ends_with("global/networks/default"));
    let nat_ok = nic
        .and_then(|n| n.pointer("/accessConfigs"))
        .and_then(Value::as_array)
        .is_none_or(|a| {
            a.iter().all(|c| {
                c.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == "ONE_TO_ONE_NAT")
            })
        });
    if !network_ok || !nat_ok {
        return Err(invalid(
            "networkInterfaces[0]",
            "the default network with ONE_TO_ONE_NAT access configs is required",
        ));
    }
    let mut keys = Vec::new();
    for item in b
        .pointer("/metadata/items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(k), Some(_)) = (
            item.get("key").and_then(Value::as_str),
            item.get("value").and_then(Value::as_str),
        ) else {
            return Err(invalid(
                "metadata",
                "every item needs a string key and value",
            ));
        };
        if keys.contains(&k) {
            return Err(invalid("metadata", "duplicate metadata key"));
        }
        keys.push(k);
    }
    let labels: BTreeMap<String, String> =
        match b.get("labels").map(|l| serde_json::from_value(l.clone())) {
            None => BTreeMap::new(),
            Some(Ok(l)) => l,
            Some(Err(_)) => return Err(invalid("labels", "must be a map of strings")),
        };
    let label_ok = |s: &str, key: bool| {
        s.len() <= 63
            && (!key || s.starts_with(|c: char| c.is_ascii_lowercase()))
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    };
    if !labels
        .iter()
        .all(|(k, v)| label_ok(k, true) && label_ok(v, false))
    {
        return Err(invalid(
            "labels",
            "keys and values must be lowercase letters, digits, _ or -",
        ));
    }
    if !b
        .pointer("/tags/items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|t| t.as_str().is_some_and(valid_name))
    {
        return Err(invalid("tags.items", "network tags must be RFC 1035 names"));
    }
    Ok((name.to_owned(), labels))
}

fn spawn_life_cycle(shared: &Arc<Shared>, key: String, op: String, capacity: bool) {
    let weak = Arc::downgrade(shared);
    let step = shared.cfg.state_step;
    shared.spawn(async move {
        tokio::time::sleep(step).await;
        let Some(s) = weak.upgrade() else { return };
        {
            let mut inv = lock(&s.inventory);
            if capacity {
                inv.instances.remove(&key);
                inv.finish(&op, Some(("ZONE_RESOURCE_POOL_EXHAUSTED", "The zone does not have enough resources available to fulfill the request. Try a different zone, or try again later.", 503)));
                return;
            }
            let n = inv.next();
            match inv.instances.get_mut(&key) {
                Some(i) if i.status == "PROVISIONING" => {
                    i.status = "STAGING".into();
                    i.nat_ip = nat_ip(i.id * 7 + n % 3);
                }
                _ => return,
            }
            inv.finish(&op, None);
        }
        drop(s);
        tokio::time::sleep(step).await;
        boot(&weak, &key);
    });
}

fn boot(weak: &Weak<Shared>, key: &str) {
    let Some(s) = weak.upgrade() else { return };
    let event = {
        let mut inv = lock(&s.inventory);
        let Some(i) = inv.instances.get_mut(key).filter(|i| i.status == "STAGING") else {
            return;
        };
        i.status = "RUNNING".into();
        if i.booted {
            return;
        }
        i.booted = true;
        let user_data = i
            .body
            .pointer("/metadata/items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|m| m["key"] == "user-data")
            .and_then(|m| m["value"].as_str())
            .unwrap_or_default()
            .to_owned();
        BootEvent {
            server_id: key.to_owned(),
            name: i.name.clone(),
            user_data,
            ipv4: i.nat_ip.clone(),
        }
    };
    if let Some(hook) = &s.cfg.boot_hook {
        hook(event);
    }
}

pub(crate) fn delete(shared: &Arc<Shared>, call: &Call, zone: &str, name: &str) -> Reply {
    let key = format!("{zone}/{name}");
    let mut inv = lock(&shared.inventory);
    let Some(i) = inv.instances.get_mut(&key) else {
        return not_found(&format!(
            "projects/{}/zones/{zone}/instances/{name}",
            shared.cfg.project_id
        ));
    };
    i.status = "STOPPING".into();
    let op = inv.start(
        zone,
        "delete",
        &format!("zones/{zone}/instances/{name}"),
        false,
    );
    drop(inv);
    remember(shared, call, &op);
    let (weak, step, op2) = (Arc::downgrade(shared), shared.cfg.state_step, op.clone());
    shared.spawn(async move {
        tokio::time::sleep(step).await;
        if let Some(s) = weak.upgrade() {
            let mut inv = lock(&s.inventory);
            inv.instances.remove(&key);
            inv.finish(&op2, None);
        }
    });
    operation(shared, &op, false)
}
