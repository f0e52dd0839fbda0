//! A provision request and its validation. Every field is checked before the database or a
//! provider sees it; errors name the field (`region`, `ssh_source_cidr`, …) and echo at
//! most a sanitized prefix of the value.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::sanitized_prefix;
use crate::{FieldError, NodeName, Role};
use levelrail_types::ProviderId;

const MAX_CATALOG_ID: usize = 64;
const MAX_SSH_KEYS: usize = 10;
const MAX_SSH_KEY_LEN: usize = 16 * 1024;
const MAX_IMAGE_LEN: usize = 128;
const MAX_REQUEST_ID_LEN: usize = 128;
const MAX_ADDR_LEN: usize = 260;
const SSH_KEY_TYPES: [&str; 8] = [
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-dss",
];

/// A provision request as it arrives (after proto conversion), not yet validated.
#[derive(Debug, Clone, Default)]
pub struct ProvisionInput {
    /// The cloud; `None` when the request named none.
    pub provider: Option<ProviderId>,
    /// Region id.
    pub region: String,
    /// Size id.
    pub size: String,
    /// Node name.
    pub name: String,
    /// Role (unspecified is general).
    pub role: Role,
    /// OpenSSH public keys.
    pub ssh_public_keys: Vec<String>,
    /// Opt-in SSH source CIDR; empty for none.
    pub ssh_source_cidr: String,
    /// Image override; empty for the provider's default.
    pub image: String,
    /// Agent address; empty for the configured default.
    pub control_plane_addr: String,
    /// Idempotency key; empty for none.
    pub request_id: String,
    /// Keep resources after a failure.
    pub keep_on_failure: bool,
    /// Regions to try, in order, when the ones before have no capacity.
    pub fallback_regions: Vec<String>,
    /// Sizes to try, in order, likewise.
    pub fallback_sizes: Vec<String>,
}

/// A validated provision request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProvision {
    /// The cloud.
    pub provider: ProviderId,
    /// Region id (syntax checked; the catalog check is the provisioner's).
    pub region: String,
    /// Size id (likewise).
    pub size: String,
    /// Node name.
    pub name: NodeName,
    pub role: Role,
    /// OpenSSH public keys, trimmed.
    pub ssh_public_keys: Vec<String>,
    /// SSH source CIDR, normalized.
    pub ssh_source_cidr: Option<String>,
    /// Image override.
    pub image: Option<String>,
    /// `host:port` the agent dials.
    pub control_plane_addr: String,
    /// Idempotency key.
    pub request_id: Option<String>,
    /// Keep resources after a failure.
    pub keep_on_failure: bool,
    /// Alternative regions, in order (syntax checked; the catalog check is the
    /// provisioner's).
    pub fallback_regions: Vec<String>,
    /// Alternative sizes, in order (likewise).
    pub fallback_sizes: Vec<String>,
}

impl NewProvision {
    /// Every region to try: the requested one first.
    pub fn regions(&self) -> Vec<String> {
        std::iter::once(self.region.clone())
            .chain(self.fallback_regions.iter().cloned())
            .collect()
    }

    /// Every size to try: the requested one first.
    pub fn sizes(&self) -> Vec<String> {
        std::iter::once(self.size.clone())
            .chain(self.fallback_sizes.iter().cloned())
            .collect()
    }
}

impl ProvisionInput {
    /// Validates every field; an empty `control_plane_addr` becomes `default_addr`.
    pub fn validate(self, default_addr: Option<&str>) -> Result<NewProvision, FieldError> {
        let provider = self.provider.ok_or_else(|| {
            FieldError::new(
                "provider",
                format!("is required: {}", ProviderId::choices()),
            )
        })?;
        catalog_id("region", &self.region)?;
        catalog_id("size", &self.size)?;
        fallbacks("fallback_regions", &self.fallback_regions)?;
        fallbacks("fallback_sizes", &self.fallback_sizes)?;
        let name = NodeName::parse_as(&self.name, "name")?;
        let ssh_public_keys = ssh_keys(&self.ssh_public_keys)?;
        let ssh_source_cidr = optional(&self.ssh_source_cidr).map(cidr).transpose()?;
        let image = optional(&self.image).map(image).transpose()?;
        let control_plane_addr = match (optional(&self.control_plane_addr), default_addr) {
            (Some(addr), _) | (None, Some(addr)) => host_port(addr)?,
            (None, None) => {
                return Err(FieldError::new(
                    "control_plane_addr",
                    "is required: this control plane has no default agent address (host:port)",
                ));
            }
        };
        let request_id = optional(&self.request_id).map(request_id).transpose()?;
        Ok(NewProvision {
            provider,
            region: self.region,
            size: self.size,
            name,
            role: self.role,
            ssh_public_keys,
            ssh_source_cidr,
            image,
            control_plane_addr,
            request_id,
            keep_on_failure: self.keep_on_failure,
            fallback_regions: self.fallback_regions,
            fallback_sizes: self.fallback_sizes,
        })
    }
}

/// Checks a list of alternatives: at most [`super::MAX_FALLBACKS`], each a catalog id
/// (errors name the field and the entry).
fn fallbacks(field: &'static str, values: &[String]) -> Result<(), FieldError> {
    if values.len() > super::MAX_FALLBACKS {
        return Err(FieldError::new(
            field,
            format!("at most {} alternatives", super::MAX_FALLBACKS),
        ));
    }
    for (i, value) in values.iter().enumerate() {
        catalog_id(field, value)
            .map_err(|e| FieldError::new(field, format!("entry {}: {}", i + 1, e.message)))?;
    }
    Ok(())
}

fn optional(value: &str) -> Option<&str> {
    Some(value.trim()).filter(|v| !v.is_empty())
}

fn invalid(field: &'static str, value: &str, rule: &str) -> FieldError {
    FieldError::new(field, format!("{} {rule}", sanitized_prefix(value)))
}

/// A provider catalog id: `fsn1`, `us-east-1`, `Standard_B2s`, `t3.micro`, `e2-medium`.
pub fn catalog_id(field: &'static str, value: &str) -> Result<(), FieldError> {
    if value.is_empty() {
        return Err(FieldError::new(field, "is required"));
    }
    let ok = value.len() <= MAX_CATALOG_ID
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            value,
            "must be 1-64 letters, digits, '-', '_' or '.'",
        ))
    }
}

fn ssh_keys(keys: &[String]) -> Result<Vec<String>, FieldError> {
    const FIELD: &str = "ssh_public_keys";
    if keys.len() > MAX_SSH_KEYS {
        return Err(FieldError::new(
            FIELD,
            format!("at most {MAX_SSH_KEYS} keys"),
        ));
    }
    keys.iter()
        .map(|key| {
            let key = key.trim();
            let mut parts = key.split(' ');
            let (kind, body) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let printable = key.chars().all(|c| !c.is_control());
            let body_ok = !body.is_empty()
                && body
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
            if key.len() <= MAX_SSH_KEY_LEN && printable && SSH_KEY_TYPES.contains(&kind) && body_ok
            {
                Ok(key.to_owned())
            } else {
                Err(invalid(
                    FIELD,
                    key,
                    "is not an OpenSSH public key (type base64 [comment])",
                ))
            }
        })
        .collect()
}

/// `203.0.113.7/32` or `2001:db8::/48`, with no host bits set.
fn cidr(value: &str) -> Result<String, FieldError> {
    const FIELD: &str = "ssh_source_cidr";
    let rule = "must be a network in CIDR form (203.0.113.7/32, 2001:db8::/48)";
    let (addr, prefix) = value
        .split_once('/')
        .ok_or_else(|| invalid(FIELD, value, rule))?;
    let addr: IpAddr = addr.parse().map_err(|_| invalid(FIELD, value, rule))?;
    let prefix: u8 = prefix.parse().map_err(|_| invalid(FIELD, value, rule))?;
    let host_bits_clear = match addr {
        IpAddr::V4(v4) if prefix <= 32 => {
            u32::from(v4).checked_shl(u32::from(prefix)).unwrap_or(0) == 0
        }
        IpAddr::V6(v6) if prefix <= 128 => {
            u128::from(v6).checked_shl(u32::from(prefix)).unwrap_or(0) == 0
        }
        _ => {
            return Err(invalid(
                FIELD,
                value,
                "has a prefix longer than the address",
            ));
        }
    };
    if !host_bits_clear {
        return Err(invalid(
            FIELD,
            value,
            "has host bits set: give the network address",
        ));
    }
    Ok(format!("{addr}/{prefix}"))
}

fn image(value: &str) -> Result<String, FieldError> {
    let ok = value.len() <= MAX_IMAGE_LEN
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/@".contains(&b));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(invalid(
            "image",
            value,
            "must be 1-128 letters, digits and - _ . : / @",
        ))
    }
}

fn request_id(value: &str) -> Result<String, FieldError> {
    let ok = value.len() <= MAX_REQUEST_ID_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(invalid(
            "request_id",
            value,
            "must be 1-128 letters, digits, '-', '_' or '.'",
        ))
    }
}

/// `host:port` or `[v6]:port` with a DNS name or an IP address as host (the error names
/// `control_plane_addr`).
pub fn host_port(value: &str) -> Result<String, FieldError> {
    const FIELD: &str = "control_plane_addr";
    let rule = "must be host:port or [ipv6]:port (port 1-65535)";
    let fail = || invalid(FIELD, value, rule);
    if value.len() > MAX_ADDR_LEN || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(fail());
    }
    let (host_ok, port) = if let Some(rest) = value.strip_prefix('[') {
        let (v6, port) = rest.split_once("]:").ok_or_else(fail)?;
        (v6.parse::<Ipv6Addr>().is_ok(), port)
    } else {
        let (host, port) = value.rsplit_once(':').ok_or_else(fail)?;
        (host.parse::<Ipv4Addr>().is_ok() || is_dns_name(host), port)
    };
    let port_ok = port.len() <= 5
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
    if host_ok && port_ok {
        Ok(value.to_owned())
    } else {
        Err(fail())
    }
}

fn is_dns_name(host: &str) -> bool {
    let labels: Vec<&str> = host.strip_suffix('.').unwrap_or(host).split('.').collect();
    host.len() <= 253
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels
            .last()
            .is_some_and(|l| !l.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests;
