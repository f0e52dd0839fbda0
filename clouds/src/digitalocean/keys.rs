//! SSH keys for a droplet. The operator's public keys are uploaded to the account (or an
//! identical key already there is reused: same key material is what DigitalOcean's
//! fingerprint identifies, so each key is looked up by its MD5 fingerprint: one call,
//! however many keys the account holds) and referenced by id. With no operator key, a
//! generated key whose private half is discarded is embedded instead, so DigitalOcean neither
//! sets nor e-mails a root password. Keys uploaded for a provision are named `levelrail-<provision>-key-<n>` (or
//! `-key-lock`) so its deletion finds them.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use super::client::Api;
use super::names;
use super::retry::retry_create;
use crate::http::RetryPolicy;
use crate::{CreateServer, ErrorKind, ProviderError, ProviderId};

/// The account key ids to embed: the operator's public keys, uploading the missing ones as
/// `levelrail-<provision>-key-<n>`, or the provision's lock key when there is none.
pub(super) async fn ensure_keys(
    api: &Api,
    policy: &RetryPolicy,
    req: &CreateServer,
) -> Result<Vec<u64>, ProviderError> {
    if req.ssh_public_keys.is_empty() {
        return Ok(vec![
            ensure_lock_key(api, policy, &req.ownership.provision_id).await?,
        ]);
    }
    let wanted = req
        .ssh_public_keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            crate::ssh::md5_fingerprint(k)
                .map(|fp| (fp, k.trim()))
                .ok_or_else(|| bad_key(i))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = Vec::with_capacity(wanted.len());
    for (index, (fingerprint, public_key)) in wanted.iter().enumerate() {
        let find = || api.ssh_key_by_fingerprint(fingerprint);
        if let Some(key) = find().await? {
            ids.push(key.id);
            continue;
        }
        let name = names::key_name(&req.ownership.provision_id, index);
        let create = || async {
            match api.create_ssh_key(&name, public_key).await {
                // 422 "SSH Key is already in use on your account": a concurrent upload won.
                Err(e) if e.status == Some(422) => find().await?.ok_or(e),
                other => other,
            }
        };
        ids.push(retry_create(policy, find, create).await?.id);
    }
    Ok(ids)
}

fn bad_key(index: usize) -> ProviderError {
    ProviderError::new(
        ProviderId::DigitalOcean,
        ErrorKind::InvalidRequest,
        "invalid_ssh_key",
        &format!(
            "SSH public key {} is not an OpenSSH public key line",
            index + 1
        ),
    )
}

/// The lock keys this process generated for provisions whose droplet does not exist yet
/// (at most [`LOCK_KEYS_KEPT`], above any in-flight bound).
static LOCK_KEYS: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Mutex::default);
const LOCK_KEYS_KEPT: usize = 65_536;

/// Forgets the provision's lock key (its droplet exists: no create will be retried).
pub(super) fn forget_lock_key(provision: &str) {
    LOCK_KEYS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(provision);
}

/// The provision's lock key in this process: generated once, so every retried create
/// finds by its fingerprint the key an earlier attempt uploaded.
fn lock_key_for(provision: &str) -> Result<String, ProviderError> {
    let mut keys = LOCK_KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(key) = keys.get(provision) {
        return Ok(key.clone());
    }
    if keys.len() >= LOCK_KEYS_KEPT {
        keys.clear();
    }
    let key = crate::ssh::lock_key(ProviderId::DigitalOcean)?;
    keys.insert(provision.to_owned(), key.clone());
    Ok(key)
}

/// The provision's lock key, looked up by its fingerprint (a retry finds what an earlier
/// attempt of this process uploaded) or uploaded under the provision's lock-key name. A key
/// uploaded before a restart is not looked for (that would mean listing every key of the
/// account); it carries the same name, so the provision's cleanup deletes it too.
async fn ensure_lock_key(
    api: &Api,
    policy: &RetryPolicy,
    provision: &str,
) -> Result<u64, ProviderError> {
    let name = names::lock_key_name(provision);
    let public_key = lock_key_for(provision)?;
    let fingerprint = crate::ssh::md5_fingerprint(&public_key).ok_or_else(|| bad_key(0))?;
    let find = || api.ssh_key_by_fingerprint(&fingerprint);
    if let Some(key) = find().await? {
        return Ok(key.id);
    }
    Ok(
        retry_create(policy, find, || api.create_ssh_key(&name, &public_key))
            .await?
            .id,
    )
}
