//! `/servers` of the fake: create (validated like the real API: unique names, known type,
//! image, location, SSH keys and firewalls, label syntax, 32 KiB user-data), get, list with
//! `name` / `label_selector` / `status`, delete, and the life cycle
//! `initializing → starting → running` (one `state_step` each, then the boot hook) and
//! `deleting → gone`. A create in a location of `full_regions` is refused with 412
//! `resource_unavailable` after validation, leaving nothing behind.
use std::sync::{Arc, Weak};

use serde_json::{Value, json};

use super::catalog;
use super::labels;
use super::state::{Server, action_json, ipv4_of, now_rfc3339, server_json};
use super::wire::{
    Call, Reply, Shared, id_of, invalid, name_filter, not_found, not_unique, page_of, selected,
    selector,
};
use crate::fakes::BootEvent;
use crate::fakes::edge::lock;

/// The largest user-data Hetzner accepts.
const MAX_USER_DATA: usize = 32 * 1024;

pub(crate) fn list(shared: &Shared, call: &Call) -> Reply {
    let sel = match selector(call) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let statuses: Vec<&str> = call
        .query
        .iter()
        .filter(|(k, _)| k == "status")
        .map(|(_, v)| v.as_str())
        .collect();
    let inventory = lock(&shared.inventory);
    let items: Vec<&Server> = inventory
        .servers
        .values()
        .filter(|s| name_filter(call, &s.name) && selected(&sel, &s.labels))
        .filter(|s| statuses.is_empty() || statuses.contains(&s.status.as_str()))
        .collect();
    page_of(shared, call, "servers", items, server_json)
}

pub(crate) fn get(shared: &Shared, id: &str) -> Reply {
    let inv = lock(&shared.inventory);
    match id_of(id).and_then(|id| inv.servers.get(&id)) {
        Some(s) => Reply::json(200, json!({ "server": server_json(s) })),
        None => not_found("server"),
    }
}

pub(crate) fn create(shared: &Arc<Shared>, call: &Call) -> Reply {
    let b = &call.body;
    let Some(name) = b.get("name").and_then(Value::as_str) else {
        return invalid("name", "is required");
    };
    if !is_hostname(name) {
        return invalid("name", "must be a valid hostname");
    }
    let Some(server_type) =
        string_or_id(b.get("server_type")).and_then(|k| catalog::server_type(&k))
    else {
        return invalid("server_type", "server type not found");
    };
    let image = match string_or_id(b.get("image")) {
        Some(i) if catalog::image_exists(&i) => i,
        _ => return invalid("image", "image not found"),
    };
    let location = match string_or_id(b.get("location")) {
        None => catalog::LOCATIONS
            .iter()
            .find(|l| server_type.sold_in(l.name)),
        Some(key) => catalog::location(&key),
    };
    let Some(location) = location else {
        return invalid("location", "location not found");
    };
    if !server_type.sold_in(location.name) {
        return invalid("server_type", "unsupported location for server type");
    }
    let user_data = b
        .get("user_data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if user_data.len() > MAX_USER_DATA {
        return invalid("user_data", "is too long");
    }
    let labels = match labels::validate(b.get("labels").unwrap_or(&Value::Null)) {
        Ok(l) => l,
        Err(e) => return invalid("labels", &e),
    };
    let start = b
        .get("start_after_create")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut inv = lock(&shared.inventory);
    let mut ssh_keys = Vec::new();
    for key in b
        .get("ssh_keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = string_or_id(Some(key)).unwrap_or_default();
        match inv
            .ssh_keys
            .values()
            .find(|k| k.name == key || k.id.to_string() == key)
        {
            Some(k) => ssh_keys.push(k.name.clone()),
            None => return invalid("ssh_keys", &format!("SSH key `{key}` not found")),
        }
    }
    let mut firewalls = Vec::new();
    for f in b
        .get("firewalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match f
            .get("firewall")
            .and_then(Value::as_u64)
            .filter(|id| inv.firewalls.contains_key(id))
        {
            Some(id) => firewalls.push(id),
            None => return invalid("firewalls", "firewall not found"),
        }
    }
    if inv.servers.values().any(|s| s.name == name) {
        return not_unique("name", "server name is already used");
    }
    if shared.full_regions.iter().any(|r| r == location.name) {
        return Reply::resource_unavailable();
    }
    let id = inv.next_id();
    for f in &firewalls {
        if let Some(fw) = inv.firewalls.get_mut(f) {
            fw.applied_to.insert(id);
        }
    }
    let server = Server {
        id,
        name: name.to_owned(),
        status: "initializing".into(),
        labels: labels.clone(),
        location,
        server_type,
        image,
        user_data: user_data.to_owned(),
        ssh_keys: ssh_keys.clone(),
        firewalls,
        created: now_rfc3339(),
        booted: false,
    };
    let rendered = server_json(&server);
    inv.servers.insert(id, server);
    inv.created_labels.push(labels);
    let (action, next) = (inv.next_id(), inv.next_id());
    drop(inv);
    spawn_life_cycle(shared, id, start);
    // Without SSH keys Hetzner sets a root password and returns it (and e-mails it).
    let root_password = if ssh_keys.is_empty() {
        Value::String(format!("fake-root-{id:08x}"))
    } else {
        Value::Null
    };
    let next_actions: Vec<Value> = if start {
        vec![action_json(next, "start_server", (id, "server"), false)]
    } else {
        vec![]
    };
    Reply::json(
        201,
        json!({
            "server": rendered,
            "action": action_json(action, "create_server", (id, "server"), false),
            "next_actions": next_actions,
            "root_password": root_password,
        }),
    )
}

pub(crate) fn delete(shared: &Arc<Shared>, id: &str) -> Reply {
    let mut inv = lock(&shared.inventory);
    let Some(id) = id_of(id).filter(|id| inv.servers.contains_key(id)) else {
        return not_found("server");
    };
    let action = inv.next_id();
    if shared.state_step.is_zero() {
        inv.remove_server(id);
    } else if let Some(s) = inv.servers.get_mut(&id) {
        s.status = "deleting".into();
        let weak = Arc::downgrade(shared);
        let step = shared.state_step;
        spawn(shared, async move {
            tokio::time::sleep(step).await;
            if let Some(shared) = weak.upgrade() {
                lock(&shared.inventory).remove_server(id);
            }
        });
    }
    Reply::json(
        200,
        json!({ "action": action_json(action, "delete_server", (id, "server"), false) }),
    )
}

fn spawn_life_cycle(shared: &Arc<Shared>, id: u64, start: bool) {
    let weak = Arc::downgrade(shared);
    let step = shared.state_step;
    spawn(shared, async move {
        tokio::time::sleep(step).await;
        if !advance(
            &weak,
            id,
            "initializing",
            if start { "starting" } else { "off" },
        ) || !start
        {
            return;
        }
        tokio::time::sleep(step).await;
        if advance(&weak, id, "starting", "running") {
            boot(&weak, id);
        }
    });
}

fn spawn(shared: &Shared, task: impl std::future::Future<Output = ()> + Send + 'static) {
    let handle = tokio::spawn(task);
    let mut tasks = lock(&shared.tasks);
    tasks.retain(|t| !t.is_finished());
    tasks.push(handle.abort_handle());
}

/// Moves server `id` from `from` to `to`; false when it is gone or someone changed it.
fn advance(weak: &Weak<Shared>, id: u64, from: &str, to: &str) -> bool {
    let Some(shared) = weak.upgrade() else {
        return false;
    };
    let mut inv = lock(&shared.inventory);
    match inv.servers.get_mut(&id) {
        Some(s) if s.status == from => {
            s.status = to.to_owned();
            true
        }
        _ => false,
    }
}

/// Calls the boot hook once, outside the inventory lock.
fn boot(weak: &Weak<Shared>, id: u64) {
    let Some(shared) = weak.upgrade() else { return };
    let event = {
        let mut inv = lock(&shared.inventory);
        let Some(s) = inv.servers.get_mut(&id).filter(|s| !s.booted) else {
            return;
        };
        s.booted = true;
        BootEvent {
            server_id: id.to_string(),
            name: s.name.clone(),
            user_data: s.user_data.clone(),
            ipv4: ipv4_of(id),
        }
    };
    if let Some(hook) = &shared.boot_hook {
        hook(event);
    }
}

/// A name or a numeric id given as a string or an integer.
fn string_or_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// RFC 1123 host name: labels of letters, digits and dashes, separated by dots.
fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}
