//! Deletes and long-running operation polls of the fake ARM. A VM DELETE answers 202 with
//! `Location` and, after a step, removes the VM and cascades to what carries `deleteOption:
//! Delete` (the NIC and public IP only while the network cascade is enabled); a network
//! resource still referenced is refused like ARM does (`NicInUse`, …). `Azure-AsyncOperation`
//! URLs answer the operation's status, `Location` URLs 202 until done.
use std::sync::Arc;

use serde_json::{Value, json};

use super::Shared;
use super::compute::set_power;
use super::network::subnet_resources;
use super::state::{Inventory, error};
use super::wire::Target;
use crate::fakes::edge::{Reply, lock};

pub(crate) fn delete_vm(shared: &Arc<Shared>, t: &Target) -> Reply {
    let mut inv = lock(&shared.inventory);
    let Some(vm) = inv.get_mut(&t.id) else {
        return Reply::json(204, Value::Null);
    };
    vm.set_state("Deleting");
    let location = vm.location.clone();
    set_power(&mut inv, &t.id, "deallocating");
    let op = inv.start_operation(false);
    drop(inv);
    let weak = Arc::downgrade(shared);
    let (id, op2, step) = (t.id.clone(), op.clone(), shared.cfg.state_step);
    shared.spawn(async move {
        tokio::time::sleep(step).await;
        if let Some(s) = weak.upgrade() {
            let cascade = lock(&s.settings).cascade_network;
            let mut inv = lock(&s.inventory);
            remove_vm(&mut inv, &id, cascade);
            inv.finish_operation(&op2, None);
        }
    });
    let base = shared.base.get().cloned().unwrap_or_default();
    let url = format!(
        "{base}/subscriptions/{}/providers/Microsoft.Compute/locations/{location}/operationResults/{op}?api-version=2024-07-01",
        shared.cfg.subscription_id
    );
    Reply::json(202, Value::Null)
        .header("location", url)
        .header("retry-after", "0")
}

/// Removes a VM and what its `deleteOption`s cascade to.
fn remove_vm(inv: &mut Inventory, id: &str, cascade_network: bool) {
    let Some(vm) = inv.remove(id) else { return };
    let p = &vm.properties;
    if let Some(disk) = p
        .pointer("/storageProfile/osDisk/managedDisk/id")
        .and_then(Value::as_str)
    {
        if p.pointer("/storageProfile/osDisk/deleteOption")
            .and_then(Value::as_str)
            == Some("Delete")
        {
            inv.remove(disk);
        } else if let Some(d) = inv.get_mut(disk) {
            d.properties["managedBy"] = Value::Null;
            d.properties["diskState"] = json!("Unattached");
        }
    }
    for n in p
        .pointer("/networkProfile/networkInterfaces")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        let Some(nic_id) = n.get("id").and_then(Value::as_str) else {
            continue;
        };
        let delete = cascade_network
            && n.pointer("/properties/deleteOption")
                .and_then(Value::as_str)
                == Some("Delete");
        let Some(nic) = inv.get_mut(nic_id) else {
            continue;
        };
        if let Some(m) = nic.properties.as_object_mut() {
            m.remove("virtualMachine");
        }
        if !delete {
            continue;
        }
        let nic = nic.clone();
        inv.remove(nic_id);
        for c in nic
            .properties
            .get("ipConfigurations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let pip = c.pointer("/properties/publicIPAddress");
            if pip
                .and_then(|x| x.pointer("/properties/deleteOption"))
                .and_then(Value::as_str)
                == Some("Delete")
                && let Some(pid) = pip.and_then(|x| x.get("id")).and_then(Value::as_str)
            {
                inv.remove(pid);
            }
        }
    }
}

/// `GET …/operations/{id}` (`Azure-AsyncOperation`).
pub(crate) fn operation_status(shared: &Shared, id: &str) -> Reply {
    let inv = lock(&shared.inventory);
    let Some(op) = inv.operations.get(id) else {
        return Reply::json(404, error("NotFound", "operation not found"));
    };
    let mut body = json!({ "name": id, "status": op.status, "startTime": "2026-01-01T00:00:00Z" });
    if let Some((code, message)) = &op.error {
        body["error"] = json!({ "code": code, "message": message });
    }
    let r = Reply::json(200, body);
    if op.status == "InProgress" {
        r.header("retry-after", "0")
    } else {
        r
    }
}

/// `GET …/operationResults/{id}` (`Location`): 202 while running, then the outcome.
pub(crate) fn operation_result(shared: &Shared, id: &str) -> Reply {
    let inv = lock(&shared.inventory);
    match inv.operations.get(id) {
        None => Reply::json(404, error("NotFound", "operation not found")),
        Some(op) if op.status == "InProgress" => {
            Reply::json(202, Value::Null).header("retry-after", "0")
        }
        Some(op) => match &op.error {
            Some((code, message)) => Reply::json(400, error(code, message)),
            None => Reply::json(204, Value::Null),
        },
    }
}

pub(crate) fn delete_network(shared: &Arc<Shared>, t: &Target) -> Reply {
    let mut inv = lock(&shared.inventory);
    if inv.get(&t.id).is_none() {
        return Reply::json(204, Value::Null);
    }
    let users = inv.referrers(&t.id);
    let users: Vec<&String> = users
        .iter()
        .filter(|u| {
            !(t.kind == "Microsoft.Network/virtualNetworks"
                && u.to_ascii_lowercase()
                    .starts_with(&format!("{}/", t.id.to_ascii_lowercase())))
        })
        .collect();
    if !users.is_empty() {
        let code = match t.kind {
            "Microsoft.Network/networkInterfaces" => "NicInUse",
            "Microsoft.Network/publicIPAddresses" => "PublicIPAddressCannotBeDeleted",
            "Microsoft.Network/networkSecurityGroups" => "InUseNetworkSecurityGroupCannotBeDeleted",
            _ => "InUseSubnetCannotBeDeleted",
        };
        return Reply::json(
            400,
            error(
                code,
                &format!("{} is in use by {} and cannot be deleted.", t.id, users[0]),
            ),
        );
    }
    if t.kind == "Microsoft.Network/virtualNetworks" {
        for s in subnet_resources(&inv, &t.id) {
            inv.remove(&s.id);
        }
    }
    let location = inv
        .get(&t.id)
        .map(|r| r.location.clone())
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "westeurope".into());
    inv.remove(&t.id);
    let op = inv.start_operation(true);
    drop(inv);
    let base = shared.base.get().cloned().unwrap_or_default();
    let url = format!(
        "{base}/subscriptions/{}/providers/Microsoft.Network/locations/{location}/operationResults/{op}?api-version=2023-09-01",
        shared.cfg.subscription_id
    );
    Reply::json(202, Value::Null)
        .header("location", url)
        .header("retry-after", "0")
}
