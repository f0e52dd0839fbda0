//! Idempotent creation of a server with its SSH keys and firewall. Hetzner has no request
//! token, so idempotency comes from labels and unique names: look up by the provision label
//! first, adopt on `uniqueness_error`, and after an ambiguous failure (5xx, timeout, dropped
//! connection: the create may have happened) look up again before one more attempt. A POST
//! is never retried blindly.
use std::collections::BTreeMap;
use std::future::Future;

use tracing::{debug, info, warn};

use super::wire::{
    self, CreateFirewallRequest, CreateServerRequest, CreateSshKeyRequest, FirewallRef, Rule,
};
use super::{DEFAULT_IMAGE, HetznerProvider, labels, server_info};
use crate::{CreateServer, ErrorKind, ProviderError, ProviderId, Reason, ServerInfo};

/// Creates `req` or returns the server an earlier attempt created for the same provision.
pub(super) async fn create_server(
    p: &HetznerProvider,
    req: &CreateServer,
) -> Result<ServerInfo, ProviderError> {
    validate(req)?;
    let o = &req.ownership;
    let selector = labels::provision_selector(o);
    if let Some(existing) = p
        .servers_by_selector(&selector)
        .await?
        .into_iter()
        .min_by_key(|s| s.id)
    {
        info!(provision = %o.provision_id, server = existing.id, "adopting the server an earlier attempt created");
        return Ok(server_info(&existing));
    }
    let label_map = labels::ownership(o);
    let ssh_keys = ensure_ssh_keys(p, req, &label_map).await?;
    let firewall = ensure_firewall(p, req, &label_map).await?;
    let body = CreateServerRequest {
        name: &req.name,
        server_type: &req.size,
        location: &req.region,
        image: req.image.as_deref().unwrap_or(DEFAULT_IMAGE),
        user_data: &req.user_data,
        labels: &label_map,
        ssh_keys,
        firewalls: vec![FirewallRef {
            firewall: firewall.id,
        }],
        start_after_create: true,
    };
    let (body, selector) = (&body, selector.as_str());
    let server = create_or_adopt(
        "server",
        || async move { p.client.post::<wire::ServerEnvelope>("servers", body).await.map(|e| e.server) },
        |conflict| async move {
            if !conflict {
                return Ok(p.servers_by_selector(selector).await?.into_iter().min_by_key(|s| s.id));
            }
            // The name is taken: ours (an earlier attempt) or someone else's.
            let named: Vec<wire::Server> = p.client.list("servers", &[("name", req.name.as_str())]).await?;
            match named.into_iter().next() {
                Some(s) if labels::is_ours(&s.labels, o) => Ok(Some(s)),
                Some(_) => Err(invalid("uniqueness_error", &format!("the name `{}` is taken by a server Levelrail did not create for this provision", req.name))),
                None => Ok(None),
            }
        },
    )
    .await?;
    info!(provision = %o.provision_id, server = server.id, "server created");
    Ok(server_info(&server))
}

/// Runs `post`; on `uniqueness_error` (`lookup(true)`) or an ambiguous failure
/// (`lookup(false)`) adopts what the lookup finds. After an ambiguous failure with nothing
/// found, posts once more.
async fn create_or_adopt<T, P, PF, L, LF>(
    what: &str,
    post: P,
    lookup: L,
) -> Result<T, ProviderError>
where
    P: Fn() -> PF,
    PF: Future<Output = Result<T, ProviderError>>,
    L: Fn(bool) -> LF,
    LF: Future<Output = Result<Option<T>, ProviderError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let err = match post().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if err.reason == Reason::AlreadyExists {
            debug!(what, "name already taken; looking for our own");
            return lookup(true).await?.ok_or(err);
        }
        if err.kind != ErrorKind::Unavailable {
            return Err(err);
        }
        warn!(what, attempt, error = %err, "create failed ambiguously; looking up before trying again");
        if let Some(found) = lookup(false).await? {
            return Ok(found);
        }
        if attempt >= 2 {
            return Err(err);
        }
    }
}

/// The names of the SSH keys to inject: the operator's keys, reusing identical keys already
/// in the project (Hetzner refuses a second key with the same fingerprint), or, when the
/// operator gave none, a generated key whose private half is discarded, so Hetzner neither
/// sets nor e-mails a root password. Each key is looked up by its fingerprint (the lock key
/// by its name and our labels): one call, however many keys the project holds.
async fn ensure_ssh_keys(
    p: &HetznerProvider,
    req: &CreateServer,
    label_map: &BTreeMap<String, String>,
) -> Result<Vec<String>, ProviderError> {
    let base = labels::resource_name(&req.ownership);
    let lock = req.ssh_public_keys.is_empty();
    let wanted: Vec<(String, String)> = if lock {
        vec![(
            format!("{base}-lock"),
            crate::ssh::lock_key(ProviderId::Hetzner)?,
        )]
    } else {
        req.ssh_public_keys
            .iter()
            .enumerate()
            .map(|(i, k)| (format!("{base}-{}", i + 1), k.trim().to_owned()))
            .collect()
    };
    let selector = labels::provision_selector(&req.ownership);
    let mut names = Vec::with_capacity(wanted.len());
    for (name, public_key) in &wanted {
        // Not a key at all: no lookup; Hetzner's refusal of the create says why.
        let fingerprint = (!lock)
            .then(|| crate::ssh::md5_fingerprint(public_key))
            .flatten();
        let (name, selector, fingerprint) =
            (name.as_str(), selector.as_str(), fingerprint.as_deref());
        let find = || async move {
            let found: Vec<wire::SshKey> = match fingerprint {
                Some(fp) => p.client.list("ssh_keys", &[("fingerprint", fp)]).await?,
                None if lock => {
                    let named: Vec<wire::SshKey> = p
                        .client
                        .list("ssh_keys", &[("name", name), ("label_selector", selector)])
                        .await?;
                    named
                        .into_iter()
                        .filter(|k| k.name == name && labels::is_ours(&k.labels, &req.ownership))
                        .collect()
                }
                None => Vec::new(),
            };
            Ok::<_, ProviderError>(found.into_iter().next())
        };
        let key = match find().await? {
            Some(key) => key,
            None => {
                let body = &CreateSshKeyRequest {
                    name,
                    public_key,
                    labels: label_map,
                };
                create_or_adopt(
                    "ssh key",
                    || async move {
                        p.client
                            .post::<wire::SshKeyEnvelope>("ssh_keys", body)
                            .await
                            .map(|e| e.ssh_key)
                    },
                    |_| find(),
                )
                .await?
            }
        };
        if !names.contains(&key.name) {
            names.push(key.name);
        }
    }
    Ok(names)
}

/// The provision's firewall: no inbound rule (Hetzner then drops all inbound traffic), or
/// TCP 22 from the operator's CIDR only when asked. Outbound stays open (no outbound rule).
async fn ensure_firewall(
    p: &HetznerProvider,
    req: &CreateServer,
    label_map: &BTreeMap<String, String>,
) -> Result<wire::Firewall, ProviderError> {
    let o = &req.ownership;
    let selector = labels::provision_selector(o);
    let selector = selector.as_str();
    let by_label = || async move {
        let found: Vec<wire::Firewall> = p
            .client
            .list("firewalls", &[("label_selector", selector)])
            .await?;
        Ok::<_, ProviderError>(found.into_iter().min_by_key(|f| f.id))
    };
    if let Some(f) = by_label().await? {
        return Ok(f);
    }
    let name = labels::resource_name(o);
    let name = name.as_str();
    let rules = req
        .ssh_source_cidr
        .iter()
        .map(|cidr| Rule {
            direction: "in",
            protocol: "tcp",
            port: "22".into(),
            source_ips: vec![cidr.clone()],
            description: "SSH from the operator",
        })
        .collect();
    let body = &CreateFirewallRequest {
        name,
        labels: label_map,
        rules,
    };
    create_or_adopt(
        "firewall",
        || async move {
            p.client
                .post::<wire::FirewallEnvelope>("firewalls", body)
                .await
                .map(|e| e.firewall)
        },
        |conflict| async move {
            if let Some(f) = by_label().await? {
                return Ok(Some(f));
            }
            if conflict {
                return Err(invalid(
                    "uniqueness_error",
                    &format!(
                        "the firewall name `{name}` is taken by a firewall Levelrail did not create"
                    ),
                ));
            }
            Ok(None)
        },
    )
    .await
}

fn validate(req: &CreateServer) -> Result<(), ProviderError> {
    req.ownership.provision(ProviderId::Hetzner)?;
    for (i, k) in req.ssh_public_keys.iter().enumerate() {
        if k.split_whitespace().count() < 2 {
            return Err(invalid(
                "invalid_input",
                &format!("ssh_public_keys[{i}] is not an OpenSSH public key"),
            ));
        }
    }
    Ok(())
}

fn invalid(code: &str, message: &str) -> ProviderError {
    ProviderError::new(
        ProviderId::Hetzner,
        ErrorKind::InvalidRequest,
        code,
        message,
    )
}
