//! Idempotent droplet creation. DigitalOcean has no idempotency token and droplet (and
//! firewall) names are not unique, so a create is never blindly retried: the provision tag
//! is listed before the first try and before every retry, and an existing droplet is
//! adopted. SSH keys come from `keys.rs`. A firewall with no inbound rule, applied by the
//! provision tag, exists before the droplet does.
use std::net::IpAddr;

use tracing::info;

use super::DEFAULT_IMAGE;
use super::client::Api;
use super::keys;
use super::names::{self, OWNER_TAG};
use super::retry::retry_create;
use super::wire::{
    Addresses, CreateDroplet, CreateFirewall, Droplet, Firewall, InboundRule, OutboundRule,
};
use crate::http::RetryPolicy;
use crate::{CreateServer, ErrorKind, ProviderError, ProviderId};

/// Makes sure the provision's firewall exists, then creates the droplet of `req` (or adopts
/// the one an earlier attempt created) with the tag the firewall applies to.
pub(super) async fn create_droplet(
    api: &Api,
    policy: &RetryPolicy,
    req: &CreateServer,
) -> Result<Droplet, ProviderError> {
    let provision = req.ownership.provision_id.as_str();
    let provision_tag = names::provision_tag(provision)?;
    let control_plane_tag = names::control_plane_tag(&req.ownership.control_plane)?;
    let booting_tag = names::booting_tag(&req.ownership.control_plane)?;
    if let Some(cidr) = &req.ssh_source_cidr {
        check_cidr(cidr)?;
    }
    // The firewall comes first, applied by the provision tag, so the droplet is covered
    // from its first second; a firewall can only name a tag that exists.
    api.create_tag(&provision_tag).await?;
    ensure_firewall(api, policy, req, &provision_tag).await?;
    let find = || async { Ok(first(api.droplets_tagged(&provision_tag).await?)) };
    let droplet = match find().await? {
        Some(existing) => {
            info!(
                provision,
                droplet = existing.id,
                "adopting the droplet an earlier attempt created"
            );
            existing
        }
        None => {
            let ssh_keys = keys::ensure_keys(api, policy, req).await?;
            let body = CreateDroplet {
                name: &req.name,
                region: &req.region,
                size: &req.size,
                image: req.image.as_deref().unwrap_or(DEFAULT_IMAGE),
                ssh_keys,
                backups: false,
                ipv6: false,
                monitoring: false,
                tags: vec![
                    OWNER_TAG.to_owned(),
                    control_plane_tag,
                    provision_tag.clone(),
                    booting_tag,
                ],
                user_data: &req.user_data,
            };
            let created = retry_create(policy, find, || api.create_droplet(&body)).await?;
            keys::forget_lock_key(provision);
            created
        }
    };
    Ok(droplet)
}

/// The lowest-id droplet of a tag listing (there is one unless something outside Levelrail
/// tagged a droplet with our provision tag).
fn first(mut droplets: Vec<Droplet>) -> Option<Droplet> {
    droplets.sort_by_key(|d| d.id);
    droplets.into_iter().next()
}

/// The provision's firewall `levelrail-<provision>`: no inbound rule unless an SSH source
/// was given, all outbound traffic allowed, applied to every droplet with the provision tag.
async fn ensure_firewall(
    api: &Api,
    policy: &RetryPolicy,
    req: &CreateServer,
    provision_tag: &str,
) -> Result<Firewall, ProviderError> {
    let name = names::firewall_name(&req.ownership.provision_id);
    let find = || async { Ok(api.firewalls().await?.into_iter().find(|f| f.name == name)) };
    let firewall = match find().await? {
        Some(found) => found,
        None => {
            let body = firewall_body(&name, req.ssh_source_cidr.as_deref(), provision_tag);
            retry_create(policy, find, || api.create_firewall(&body)).await?
        }
    };
    if !firewall
        .tags
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|t| t == provision_tag)
    {
        api.tag_firewall(&firewall.id, vec![provision_tag.to_owned()])
            .await?;
    }
    Ok(firewall)
}

fn firewall_body(name: &str, ssh_source: Option<&str>, provision_tag: &str) -> CreateFirewall {
    let everywhere = || Addresses {
        addresses: vec!["0.0.0.0/0".to_owned(), "::/0".to_owned()],
    };
    let outbound_rules = ["tcp", "udp", "icmp"]
        .into_iter()
        .map(|protocol| OutboundRule {
            protocol,
            ports: "0".to_owned(),
            destinations: everywhere(),
        })
        .collect();
    let inbound_rules = ssh_source
        .map(|cidr| InboundRule {
            protocol: "tcp",
            ports: "22".to_owned(),
            sources: Addresses {
                addresses: vec![cidr.to_owned()],
            },
        })
        .into_iter()
        .collect();
    CreateFirewall {
        name: name.to_owned(),
        inbound_rules,
        outbound_rules,
        tags: vec![provision_tag.to_owned()],
    }
}

/// An IPv4 / IPv6 address or CIDR.
fn check_cidr(cidr: &str) -> Result<(), ProviderError> {
    let (addr, prefix) = cidr
        .split_once('/')
        .map_or((cidr, None), |(a, p)| (a, Some(p)));
    let ok = match addr.parse::<IpAddr>() {
        Ok(ip) => {
            let max = if ip.is_ipv4() { 32 } else { 128 };
            prefix.is_none_or(|p| p.parse::<u8>().is_ok_and(|p| p <= max))
        }
        Err(_) => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ProviderError::new(
            ProviderId::DigitalOcean,
            ErrorKind::InvalidRequest,
            "invalid_cidr",
            "the SSH source is not an IP address or CIDR",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_firewall_has_no_inbound_rule_unless_an_ssh_source_is_given() {
        let closed =
            serde_json::to_value(firewall_body("levelrail-p", None, "levelrail-provision-p"))
                .unwrap();
        assert!(closed.get("inbound_rules").is_none(), "{closed}");
        assert_eq!(closed["outbound_rules"].as_array().unwrap().len(), 3);
        assert_eq!(closed["tags"], serde_json::json!(["levelrail-provision-p"]));
        let ssh = serde_json::to_value(firewall_body("levelrail-p", Some("203.0.113.7/32"), "t"))
            .unwrap();
        assert_eq!(
            ssh["inbound_rules"],
            serde_json::json!([{"protocol":"tcp","ports":"22","sources":{"addresses":["203.0.113.7/32"]}}])
        );
    }

    #[test]
    fn ssh_sources_must_be_addresses_or_cidrs() {
        for ok in [
            "203.0.113.7",
            "203.0.113.0/24",
            "2001:db8::/32",
            "0.0.0.0/0",
        ] {
            assert!(check_cidr(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "203.0.113.0/33",
            "2001:db8::/129",
            "1.2.3.4/x",
        ] {
            assert!(check_cidr(bad).is_err(), "{bad}");
        }
    }
}
