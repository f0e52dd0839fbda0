//! The renderer's inputs and their validation. Every check runs before anything is
//! rendered; an error names the parameter and never echoes a value.
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use secrecy::{ExposeSecret as _, SecretString};

use super::{AgentSource, RenderError};
use levelrail_provisioner_model::fingerprint_der;

const NODE_NAME_MAX: usize = 63;
const ADDR_MAX: usize = 260;
const URL_MAX: usize = 2048;
const TOKEN_MAX: usize = 256;
const CA_PEM_MAX: usize = 64 * 1024;
const PEM_BEGIN: &str = "-----BEGIN CERTIFICATE-----";
const PEM_END: &str = "-----END CERTIFICATE-----";

/// What the cloud-init of one provision needs.
pub struct CloudInitParams {
    /// The agent listener of the control plane: `host:port` or `[v6]:port`.
    pub control_plane_addr: String,
    /// The provision's join token, `LR1.<ca fingerprint>.<token id>.<secret>`; its CA pin
    /// must be `ca_fingerprint`. Used once, by the agent's Enroll.
    pub join_token: SecretString,
    /// The provision's progress credential (`LRP1.<provision id>.<secret>`), the bearer of
    /// the progress reports.
    pub progress_credential: SecretString,
    /// The node's name: `^[a-z][a-z0-9-]*$`, at most 63 characters, no trailing `-`.
    pub node_name: String,
    /// Hex SHA-256 of the control-plane CA certificate's DER (64 digits, either case;
    /// rendered lowercase).
    pub ca_fingerprint: String,
    /// The control-plane CA certificate(s), PEM; one must have `ca_fingerprint`.
    pub ca_pem: String,
    /// The agent the node runs: the control plane's binary or a digest-pinned image.
    pub agent: AgentSource,
    /// The `https://` URL of the control plane's progress endpoint, e.g.
    /// `https://cp.example:9443/v1/provision-progress`.
    pub progress_url: String,
}

impl fmt::Debug for CloudInitParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudInitParams")
            .field("control_plane_addr", &self.control_plane_addr)
            .field("join_token", &"<redacted>")
            .field("progress_credential", &"<redacted>")
            .field("node_name", &self.node_name)
            .field("ca_fingerprint", &self.ca_fingerprint)
            .field("agent", &self.agent)
            .field("progress_url", &self.progress_url)
            .finish_non_exhaustive()
    }
}

/// The parameters after validation, normalized for rendering.
pub(super) struct Checked<'a> {
    pub(super) control_plane_addr: &'a str,
    pub(super) join_token: &'a str,
    pub(super) progress_credential: &'a str,
    pub(super) node_name: &'a str,
    /// Lowercase.
    pub(super) ca_fingerprint: String,
    /// `\n`-terminated lines.
    pub(super) ca_pem: String,
    pub(super) agent: &'a AgentSource,
    pub(super) progress_url: &'a str,
}

impl CloudInitParams {
    /// Validates every parameter, then their agreement: the token's CA pin and one
    /// certificate of `ca_pem` must both be `ca_fingerprint`.
    pub(super) fn check(&self) -> Result<Checked<'_>, RenderError> {
        check_addr(&self.control_plane_addr)?;
        let token = self.join_token.expose_secret();
        let token_pin = check_token(token)?;
        let progress_credential = self.progress_credential.expose_secret();
        check_progress_credential(progress_credential)?;
        check_node_name(&self.node_name)?;
        let fingerprint = check_fingerprint("ca_fingerprint", &self.ca_fingerprint)?;
        let ca_pem = check_ca_pem(&self.ca_pem, &fingerprint)?;
        self.agent.validate()?;
        check_progress_url(&self.progress_url)?;
        if !token_pin.eq_ignore_ascii_case(&fingerprint) {
            return Err(RenderError::invalid(
                "join_token",
                "its CA pin does not match ca_fingerprint (the agent would refuse to enroll)",
            ));
        }
        Ok(Checked {
            control_plane_addr: &self.control_plane_addr,
            join_token: token,
            progress_credential,
            node_name: &self.node_name,
            ca_fingerprint: fingerprint,
            ca_pem,
            agent: &self.agent,
            progress_url: &self.progress_url,
        })
    }
}

/// Non-empty, at most `max` bytes, printable ASCII without spaces: rejects line breaks,
/// control characters, whitespace and any non-ASCII character (look-alikes included).
pub(super) fn plain_ascii(param: &'static str, value: &str, max: usize) -> Result<(), RenderError> {
    let problem = if value.is_empty() {
        Some("is empty".to_owned())
    } else if value.contains(['\n', '\r']) {
        Some("contains a line break".to_owned())
    } else if value.chars().any(char::is_control) {
        Some("contains a control character".to_owned())
    } else if !value.is_ascii() {
        Some("contains a non-ASCII character".to_owned())
    } else if value.contains(' ') {
        Some("contains a space".to_owned())
    } else if value.len() > max {
        Some(format!("is longer than {max} characters"))
    } else {
        None
    };
    problem.map_or(Ok(()), |reason| Err(RenderError::invalid(param, reason)))
}

/// `^[a-z][a-z0-9-]*$`, at most 63 characters, no trailing hyphen.
pub(super) fn check_node_name(name: &str) -> Result<(), RenderError> {
    plain_ascii("node_name", name, NODE_NAME_MAX)?;
    let bytes = name.as_bytes();
    let ok = bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(RenderError::invalid(
            "node_name",
            "must start with a-z, hold only a-z, 0-9 and '-', and not end with '-'",
        ))
    }
}

/// `host:port` or `[ipv6]:port`.
pub(super) fn check_addr(addr: &str) -> Result<(), RenderError> {
    plain_ascii("control_plane_addr", addr, ADDR_MAX)?;
    check_authority(addr, true).map_err(|reason| RenderError::invalid("control_plane_addr", reason))
}

/// A host (DNS name, IPv4 or bracketed IPv6) followed by `:port` (optional unless
/// `port_required`).
fn check_authority(authority: &str, port_required: bool) -> Result<(), &'static str> {
    let (host_ok, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address lacks its closing ']'")?;
        let port = match after {
            "" => None,
            after => Some(after.strip_prefix(':').ok_or("expected ':' after ']'")?),
        };
        (v6.parse::<Ipv6Addr>().is_ok(), port)
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        if host.contains(':') {
            return Err("an IPv6 address must be in brackets: [v6]:port");
        }
        (host.parse::<Ipv4Addr>().is_ok() || is_dns_name(host), port)
    };
    if !host_ok {
        return Err("the host must be a DNS name, an IPv4 address or a bracketed IPv6 address");
    }
    match port {
        Some("") | None if !port_required => Ok(()),
        Some(port) if is_port(port) => Ok(()),
        _ if port_required => Err("needs a port: host:port or [v6]:port (port 1-65535)"),
        _ => Err("the port must be 1-65535"),
    }
}

fn is_port(port: &str) -> bool {
    port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// RFC 1123 labels; the last label is not all digits (so `999.1.1.1` is no host).
fn is_dns_name(host: &str) -> bool {
    let labels: Vec<&str> = host.strip_suffix('.').unwrap_or(host).split('.').collect();
    host.len() <= 253
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
        && labels
            .last()
            .is_some_and(|last| !last.bytes().all(|b| b.is_ascii_digit()))
}

/// 64 hex digits, returned lowercase.
pub(super) fn check_fingerprint(param: &'static str, value: &str) -> Result<String, RenderError> {
    plain_ascii(param, value, 64)?;
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(RenderError::invalid(
            param,
            "must be 64 hex digits (SHA-256 of the CA's DER)",
        ))
    }
}

/// `LR1.<64 hex>.njt_<hex>.<base64url>`; returns the CA pin. Errors never quote the token.
pub(super) fn check_token(token: &str) -> Result<&str, RenderError> {
    plain_ascii("join_token", token, TOKEN_MAX)?;
    let malformed = || {
        RenderError::invalid(
            "join_token",
            "is not a Levelrail join token (LR1.<ca fingerprint>.njt_<id>.<secret>)",
        )
    };
    let parts: Vec<&str> = token.split('.').collect();
    let [version, pin, id, secret] = parts[..] else {
        return Err(malformed());
    };
    let hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let pin_ok = pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit());
    let id_ok = id
        .strip_prefix("njt_")
        .is_some_and(|h| !h.is_empty() && h.len() <= 64 && hex(h));
    let secret_ok = !secret.is_empty()
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if version == "LR1" && pin_ok && id_ok && secret_ok {
        Ok(pin)
    } else {
        Err(malformed())
    }
}

/// PEM `CERTIFICATE` blocks only, one of which hashes to `fingerprint`. Returns the text
/// normalized to `\n`-terminated lines.
pub(super) fn check_ca_pem(pem: &str, fingerprint: &str) -> Result<String, RenderError> {
    let invalid = |reason: &'static str| RenderError::invalid("ca_pem", reason);
    if pem.len() > CA_PEM_MAX {
        return Err(invalid("is larger than 64 KiB"));
    }
    if pem.contains('\r') {
        return Err(invalid("contains a carriage return"));
    }
    if pem
        .chars()
        .any(|c| c != '\n' && (c.is_control() || !c.is_ascii()))
    {
        return Err(invalid("contains a control or non-ASCII character"));
    }
    let text = pem.trim_end_matches('\n');
    let mut body: Option<Vec<usize>> = None;
    let mut blocks = 0;
    for line in text.lines() {
        match (&mut body, line) {
            (None, PEM_BEGIN) => body = Some(Vec::new()),
            (Some(lengths), PEM_END) if well_wrapped(lengths) => {
                (body, blocks) = (None, blocks + 1)
            }
            (Some(lengths), base64)
                if !base64.is_empty()
                    && base64
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)) =>
            {
                lengths.push(base64.len());
            }
            _ => {
                return Err(invalid(
                    "must hold only PEM CERTIFICATE blocks (BEGIN/END lines around evenly \
                     wrapped base64 lines)",
                ));
            }
        }
    }
    if body.is_some() || blocks == 0 {
        return Err(invalid(
            "must hold at least one complete PEM CERTIFICATE block",
        ));
    }
    let mut reader = text.as_bytes();
    let mut matched = false;
    for der in rustls_pemfile::certs(&mut reader) {
        let der = der.map_err(|_| invalid("holds a certificate that is not valid base64"))?;
        matched |= fingerprint_der(&der) == fingerprint;
    }
    if !matched {
        return Err(invalid(
            "holds no certificate whose SHA-256 is ca_fingerprint",
        ));
    }
    Ok(format!("{text}\n"))
}

/// Base64 lines of one width (a multiple of 4), the last one possibly shorter: what every
/// PEM writer emits, so a line break added inside the text is caught.
fn well_wrapped(lengths: &[usize]) -> bool {
    match lengths.split_last() {
        None => false,
        Some((last, [])) => *last > 0,
        Some((last, full)) => {
            let width = full[0];
            width % 4 == 0 && full.iter().all(|&l| l == width) && *last <= width
        }
    }
}

/// `https://<host[:port]>/<path>` with an unreserved-character path and no query.
pub(super) fn check_progress_url(url: &str) -> Result<(), RenderError> {
    check_https_url("progress_url", url)
}

/// `https://<host[:port]>/<path>` with an unreserved-character path and no query; the
/// error names `param`.
pub(super) fn check_https_url(param: &'static str, url: &str) -> Result<(), RenderError> {
    plain_ascii(param, url, URL_MAX)?;
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| RenderError::invalid(param, "must be an https:// URL"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    check_authority(authority, false).map_err(|reason| RenderError::invalid(param, reason))?;
    let path_ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%".contains(&b))
        && !path.is_empty();
    if path_ok {
        Ok(())
    } else {
        Err(RenderError::invalid(
            param,
            "needs a path of letters, digits and - . _ ~ % / (no query or fragment)",
        ))
    }
}

/// `LRP1.<id>.<base64url>`: the shape only (the control plane verifies the secret).
pub(super) fn check_progress_credential(credential: &str) -> Result<(), RenderError> {
    const PARAM: &str = "progress_credential";
    plain_ascii(PARAM, credential, TOKEN_MAX)?;
    let parts: Vec<&str> = credential.split('.').collect();
    let ok = matches!(parts[..], ["LRP1", id, secret]
        if !id.is_empty() && !secret.is_empty()
            && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    if ok {
        Ok(())
    } else {
        Err(RenderError::invalid(
            PARAM,
            "is not a progress credential (LRP1.<provision id>.<secret>)",
        ))
    }
}
