//! Deleting a provision's resources: its droplet(s), then its firewall, the SSH keys
//! uploaded for it and its provision tag. Every step treats 404 as done, so the whole
//! delete can be repeated; conflicts (a pending event on the droplet, a resource still in
//! use) are retried a few times.
use tracing::{debug, info};

use super::client::Api;
use super::names;
use super::retry::backoff;
use crate::http::RetryPolicy;
use crate::{ErrorKind, Ownership, ProviderError, ProviderId};

/// Attempts of a delete answered with a conflict.
const CONFLICT_ATTEMPTS: u32 = 4;

/// Deletes droplet `server` (when numeric) and every droplet carrying the provision tag of
/// `ownership`, then the provision's firewall, keys and tag. With no `server` it cleans up
/// by the provision tag alone (a create whose answer was lost).
pub(super) async fn delete_provision(
    api: &Api,
    policy: &RetryPolicy,
    server: Option<&str>,
    ownership: &Ownership,
) -> Result<(), ProviderError> {
    let provision = ownership.provision(ProviderId::DigitalOcean)?;
    let tag = names::provision_tag(provision)?;
    let mut droplets: Vec<u64> = match server {
        Some(id) => vec![id.parse().map_err(|_| {
            ProviderError::new(
                ProviderId::DigitalOcean,
                ErrorKind::InvalidRequest,
                "invalid_id",
                "not a DigitalOcean droplet id",
            )
        })?],
        None => Vec::new(),
    };
    for d in api.droplets_tagged(&tag).await? {
        if !droplets.contains(&d.id) {
            droplets.push(d.id);
        }
    }
    for droplet in droplets {
        retry_conflicts(policy, || api.delete_droplet(droplet)).await?;
        info!(droplet, provision, "droplet deleted");
    }
    let firewall = names::firewall_name(provision);
    for fw in api
        .firewalls()
        .await?
        .into_iter()
        .filter(|f| f.name == firewall)
    {
        retry_conflicts(policy, || api.delete_firewall(&fw.id)).await?;
        debug!(firewall = %fw.id, provision, "firewall deleted");
    }
    let prefix = names::key_prefix(provision);
    for key in api
        .ssh_keys()
        .await?
        .into_iter()
        .filter(|k| k.name.starts_with(&prefix))
    {
        retry_conflicts(policy, || api.delete_ssh_key(key.id)).await?;
        debug!(key = key.id, provision, "ssh key deleted");
    }
    retry_conflicts(policy, || api.delete_tag(&tag)).await
}

async fn retry_conflicts<F, Fut>(policy: &RetryPolicy, call: F) -> Result<(), ProviderError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), ProviderError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if is_conflict(&e) && attempt < CONFLICT_ATTEMPTS => {
                debug!(error = %e, attempt, "delete conflicted; retrying");
                backoff(policy, attempt + 1).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// 409, or DigitalOcean's 422 for a resource busy with another event or still in use.
fn is_conflict(e: &ProviderError) -> bool {
    let m = e.message.to_ascii_lowercase();
    e.status == Some(409)
        || (e.status == Some(422)
            && ["pending", "in use", "in progress", "locked"]
                .iter()
                .any(|w| m.contains(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_resources_are_conflicts_and_other_failures_are_not() {
        let e = |status, message| {
            ProviderError::new(
                ProviderId::DigitalOcean,
                ErrorKind::InvalidRequest,
                "x",
                message,
            )
            .with_status(status)
        };
        assert!(is_conflict(&e(409, "conflict")));
        assert!(is_conflict(&e(422, "Droplet already has a pending event.")));
        assert!(!is_conflict(&e(422, "Name is invalid")));
        assert!(!is_conflict(&e(500, "pending")));
    }
}
