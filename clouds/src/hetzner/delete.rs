//! Deleting a provision's server and what was created only for it: every server carrying the
//! provision's labels (one, unless an answer was lost), then its firewall, retried while
//! Hetzner still sees it applied to the server being deleted (`resource_in_use`), then its
//! SSH keys (used only when a server is created). "Not found" counts as done everywhere.
use std::collections::BTreeSet;
use std::time::Duration;

use tracing::{debug, info};

use super::{HetznerProvider, labels, server_id, wire};
use crate::{ErrorKind, Ownership, ProviderError, ProviderId, Reason};

/// Attempts at deleting a firewall whose server is still going away.
const FIREWALL_ATTEMPTS: u32 = 8;
/// The longest pause between two of them.
const FIREWALL_MAX_PAUSE: Duration = Duration::from_secs(5);

pub(super) async fn delete_provision_resources(
    p: &HetznerProvider,
    server: Option<&str>,
    o: &Ownership,
) -> Result<(), ProviderError> {
    o.provision(ProviderId::Hetzner)?;
    let mut ids = BTreeSet::new();
    if let Some(id) = server {
        ids.insert(server_id(id)?);
    }
    let selector = labels::provision_selector(o);
    ids.extend(p.servers_by_selector(&selector).await?.iter().map(|s| s.id));
    for id in &ids {
        let deleted = p.client.delete(&format!("servers/{id}")).await?;
        debug!(server = id, deleted, "server deletion requested");
    }
    let firewalls: Vec<wire::Firewall> = p
        .client
        .list("firewalls", &[("label_selector", selector.as_str())])
        .await?;
    for f in &firewalls {
        delete_firewall(p, f.id).await?;
    }
    let keys: Vec<wire::SshKey> = p
        .client
        .list("ssh_keys", &[("label_selector", selector.as_str())])
        .await?;
    for k in &keys {
        p.client.delete(&format!("ssh_keys/{}", k.id)).await?;
    }
    info!(provision = %o.provision_id, servers = ids.len(), firewalls = firewalls.len(), ssh_keys = keys.len(), "provision resources deleted");
    Ok(())
}

/// Server deletion is asynchronous: until it completes, the firewall is still applied and
/// Hetzner answers `resource_in_use`. Waits with doubling pauses, then gives up.
async fn delete_firewall(p: &HetznerProvider, id: u64) -> Result<(), ProviderError> {
    let mut pause = p.policy.base_backoff.max(Duration::from_millis(100));
    let mut attempt = 0;
    loop {
        attempt += 1;
        match p.client.delete(&format!("firewalls/{id}")).await {
            Ok(_) => return Ok(()),
            Err(e) if still_in_use(&e) && attempt < FIREWALL_ATTEMPTS => {
                debug!(
                    firewall = id,
                    attempt, "firewall still applied; waiting for the server deletion"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(FIREWALL_MAX_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
}

fn still_in_use(e: &ProviderError) -> bool {
    e.reason == Reason::InUse || e.kind == ErrorKind::Unavailable
}
