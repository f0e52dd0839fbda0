//! SSH keys for a droplet. The operator's public keys are uploaded to the account (or an
//! identical key already there is reused: same key material is what DigitalOcean's
//! fingerprint identifies) and referenced by id. With no operator key, a generated key whose
//! private half is discarded is embedded instead, so DigitalOcean neither sets nor e-mails a
//! root password. Keys uploaded for a provision are named `levelrail-<provision>-key-<n>` (or
//! `-key-lock`) so its deletion finds them.

use super::client::Api;
use super::names;
use super::retry::retry_create;
use super::wire::SshKey;
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
            key_material(k)
                .map(|m| (m, k.trim()))
                .ok_or_else(|| bad_key(i))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let existing = api.ssh_keys().await?;
    let mut ids = Vec::with_capacity(wanted.len());
    for (index, (material, public_key)) in wanted.iter().enumerate() {
        if let Some(key) = find_key(&existing, material) {
            ids.push(key.id);
            continue;
        }
        let name = names::key_name(&req.ownership.provision_id, index);
        let find = || async { Ok(find_key(&api.ssh_keys().await?, material).cloned()) };
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

fn find_key<'a>(keys: &'a [SshKey], material: &str) -> Option<&'a SshKey> {
    keys.iter()
        .find(|k| key_material(&k.public_key).as_deref() == Some(material))
}

/// `type base64` of an OpenSSH public key line (the comment is not part of the key).
fn key_material(line: &str) -> Option<String> {
    let mut parts = line.split_whitespace();
    let kind = parts.next()?;
    let blob = parts.next()?;
    let known = kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-");
    let base64 = blob.len() >= 16
        && blob
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='));
    (known && base64).then(|| format!("{kind} {blob}"))
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

/// The provision's lock key, found by name (its material is random) or uploaded.
async fn ensure_lock_key(
    api: &Api,
    policy: &RetryPolicy,
    provision: &str,
) -> Result<u64, ProviderError> {
    let name = names::lock_key_name(provision);
    let find = || async { Ok(api.ssh_keys().await?.into_iter().find(|k| k.name == name)) };
    if let Some(key) = find().await? {
        return Ok(key.id);
    }
    let public_key = crate::ssh::lock_key(ProviderId::DigitalOcean)?;
    Ok(
        retry_create(policy, find, || api.create_ssh_key(&name, &public_key))
            .await?
            .id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_material_ignores_the_comment_and_refuses_non_keys() {
        let a = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOk+2x operator@laptop";
        let b = "ssh-ed25519   AAAAC3NzaC1lZDI1NTE5AAAAIOk+2x   other comment";
        assert_eq!(key_material(a), key_material(b));
        assert!(key_material("not a key").is_none());
        assert!(key_material("ssh-ed25519").is_none());
        assert!(key_material("ssh-rsa AAAA$$$$$$$$$$$$$$$$$$$$").is_none());
    }
}
