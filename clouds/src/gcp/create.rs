//! Creating and deleting an instance. Every create checks the project-wide deny-ingress
//! firewall and repairs it when someone changed it (the original never re-checked it); SSH,
//! when asked, gets its own allow rule for the instance's tag. The insert carries a
//! `requestId` derived from the provision (and zone and name), and the instance is looked up
//! first, so a repeated create adopts the instance of an earlier attempt; the operation is
//! followed to `DONE`, so an asynchronous failure is reported by the create itself.
use reqwest::Method;
use serde_json::Value;
use tracing::{info, warn};

use super::client::request_id;
use super::labels::{self, DENY_FIREWALL};
use super::wire::{self, Instance, InstanceSpec};
use super::{GcpProvider, server_id};
use crate::{CreateServer, ErrorKind, Ownership, ProviderError, ProviderId, Reason, ServerInfo};

/// The largest metadata value GCP accepts (`user-data`).
const MAX_USER_DATA: usize = 256 * 1024;

pub(super) async fn create_server(
    p: &GcpProvider,
    req: &CreateServer,
) -> Result<ServerInfo, ProviderError> {
    validate(req)?;
    let o = &req.ownership;
    let zone = req.region.as_str();
    let path = format!("zones/{zone}/instances/{}", req.name);
    if let Some(existing) = p.compute.find::<Instance>(&path).await? {
        if !labels::is_ours(&existing.labels, o) {
            return Err(invalid(
                "alreadyExists",
                &format!(
                    "an instance named `{}` exists in {zone} and was not created for this provision",
                    req.name
                ),
            ));
        }
        info!(provision = %o.provision_id, instance = %req.name, "adopting the instance an earlier attempt created");
        return Ok(super::server_info(&existing));
    }
    ensure_deny_firewall(p).await?;
    let ssh_tag = match &req.ssh_source_cidr {
        Some(cidr) => Some(ensure_ssh_firewall(p, &req.name, cidr, o).await?),
        None => None,
    };
    let label_map = labels::ownership(o);
    let body = wire::instance(&InstanceSpec {
        name: &req.name,
        zone,
        machine_type: &req.size,
        image: req.image.as_deref().unwrap_or(wire::UBUNTU),
        user_data: &req.user_data,
        ssh_keys: &req.ssh_public_keys,
        labels: &label_map,
        ssh_tag: ssh_tag.as_deref(),
    });
    let id = request_id("create", &format!("{}:{zone}:{}", o.provision_id, req.name));
    match p
        .compute
        .mutate(
            Method::POST,
            &format!("zones/{zone}/instances"),
            Some(&body),
            &id,
        )
        .await
    {
        Ok(_) => {}
        // A request id older than Google's dedup window, or a lost answer: ours if labelled so.
        Err(e) if e.reason == Reason::AlreadyExists => {
            let existing: Instance = p.compute.get(&path).await?;
            if !labels::is_ours(&existing.labels, o) {
                return Err(e);
            }
        }
        Err(e) => return Err(e),
    }
    info!(provision = %o.provision_id, instance = %req.name, zone, "instance created");
    let created: Instance = p.compute.get(&path).await?;
    Ok(super::server_info(&created))
}

/// The deny-ingress rule exists and still denies everything; created or repaired if not.
async fn ensure_deny_firewall(p: &GcpProvider) -> Result<(), ProviderError> {
    let path = format!("global/firewalls/{DENY_FIREWALL}");
    let want = wire::deny_firewall();
    match p.compute.find::<Value>(&path).await? {
        None => {
            let id = request_id("firewall", &format!("{DENY_FIREWALL}:{}", uuid_now()));
            match p
                .compute
                .mutate(Method::POST, "global/firewalls", Some(&want), &id)
                .await
            {
                Ok(_) => info!("deny-ingress firewall created"),
                // Created concurrently by another provision.
                Err(e) if e.reason == Reason::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Some(found) if wire::deny_firewall_intact(&found) => {}
        Some(_) => {
            warn!("the deny-ingress firewall was changed outside Levelrail; repairing it");
            let id = request_id("firewall-repair", &uuid_now());
            p.compute
                .mutate(Method::PUT, &path, Some(&want), &id)
                .await?;
        }
    }
    Ok(())
}

/// The instance's SSH rule (its name is also the instance's network tag).
async fn ensure_ssh_firewall(
    p: &GcpProvider,
    instance: &str,
    cidr: &str,
    o: &Ownership,
) -> Result<String, ProviderError> {
    let name = labels::ssh_firewall(instance);
    let body = wire::ssh_firewall(&name, cidr);
    let path = format!("global/firewalls/{name}");
    let id = request_id("ssh-firewall", &format!("{}:{name}", o.provision_id));
    match p.compute.find::<Value>(&path).await? {
        None => match p
            .compute
            .mutate(Method::POST, "global/firewalls", Some(&body), &id)
            .await
        {
            Ok(_) => {}
            Err(e) if e.reason == Reason::AlreadyExists => {}
            Err(e) => return Err(e),
        },
        Some(found) if found.get("sourceRanges") == body.get("sourceRanges") => {}
        Some(_) => {
            let rid = request_id(
                "ssh-firewall-update",
                &format!("{}:{name}:{}", o.provision_id, uuid_now()),
            );
            p.compute
                .mutate(Method::PUT, &path, Some(&body), &rid)
                .await?;
        }
    }
    Ok(name)
}

/// Deletes the instance (`<zone>/<name>`, when known) and the SSH rule made for the node:
/// the instance's name, or with no instance the provision's node name (the create names the
/// instance after the node, and makes the rule before the instance). 404 counts as done; an
/// instance labelled for another provision is left alone.
pub(super) async fn delete_provision_resources(
    p: &GcpProvider,
    server: Option<&str>,
    o: &Ownership,
) -> Result<(), ProviderError> {
    o.provision(ProviderId::Gcp)?;
    let name = match server {
        Some(id) => {
            let (zone, name) = server_id(id)?;
            delete_instance(p, zone, name, o).await?;
            name
        }
        None => o.node_name.as_str(),
    };
    if !labels::valid_name(name) {
        return Ok(());
    }
    let fw = format!("global/firewalls/{}", labels::ssh_firewall(name));
    if p.compute.find::<Value>(&fw).await?.is_some() {
        let rid = request_id("delete-ssh-firewall", &format!("{}:{name}", o.provision_id));
        match p.compute.mutate(Method::DELETE, &fw, None, &rid).await {
            Ok(_) => {}
            Err(e) if e.kind == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn delete_instance(
    p: &GcpProvider,
    zone: &str,
    name: &str,
    o: &Ownership,
) -> Result<(), ProviderError> {
    let path = format!("zones/{zone}/instances/{name}");
    if let Some(found) = p.compute.find::<Instance>(&path).await? {
        if !labels::is_ours(&found.labels, o) {
            return Err(invalid(
                "not_ours",
                &format!(
                    "the instance `{name}` was not created for this provision; it is left alone"
                ),
            ));
        }
        let rid = request_id("delete", &format!("{}:{zone}:{name}", o.provision_id));
        match p.compute.mutate(Method::DELETE, &path, None, &rid).await {
            Ok(_) => info!(instance = %name, zone = %zone, "instance deleted"),
            Err(e) if e.kind == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn validate(req: &CreateServer) -> Result<(), ProviderError> {
    req.ownership.provision(ProviderId::Gcp)?;
    if !labels::valid_name(&req.name) {
        return Err(invalid(
            "invalid_input",
            "the instance name must be 1 to 63 lowercase letters, digits or hyphens, starting with a letter and not ending with a hyphen",
        ));
    }
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !ok(&req.region) || !ok(&req.size) {
        return Err(invalid(
            "invalid_input",
            "the zone and machine type must be Compute Engine names such as us-central1-a and e2-small",
        ));
    }
    if req.user_data.len() > MAX_USER_DATA {
        return Err(invalid(
            "invalid_input",
            "the user-data exceeds the 256 KiB metadata value limit",
        ));
    }
    for (i, k) in req.ssh_public_keys.iter().enumerate() {
        if k.split_whitespace().count() < 2 || k.contains('\n') {
            return Err(invalid(
                "invalid_input",
                &format!("ssh_public_keys[{i}] is not an OpenSSH public key"),
            ));
        }
    }
    Ok(())
}

/// A fresh value for request ids of calls that are not tied to a provision.
fn uuid_now() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn invalid(code: &str, message: &str) -> ProviderError {
    ProviderError::new(ProviderId::Gcp, ErrorKind::InvalidRequest, code, message)
}
