//! Configuration: command-line flags, the env file a cloud-init writes, and process
//! environment variables of the same names.
//!
//! Precedence: a process environment variable that is set and non-empty overrides the env
//! file; an empty value counts as unset everywhere. The join token is one setting with two
//! spellings (`APP_JOIN_TOKEN`, `APP_JOIN_TOKEN_FILE`): if the process environment sets
//! either, the file's pair is ignored; setting both in the same source is an error. This is
//! the only module that reads the process environment ([`process_env`]).
//!
//! Only what enrollment needs is required, and only when there is no identity to reuse:
//! an enrolled node restarts with just its identity file.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustls::pki_types::ServerName;
use secrecy::{ExposeSecret as _, SecretString};

use crate::docker::{DOCKER_HOST, DockerHost};
use crate::exit::{AgentError, EXIT_CODES_HELP};
use crate::pin::Fingerprint;
use crate::token::JoinToken;

/// `host:port` or `[ipv6]:port` of the control plane's agent listener.
pub const ADDR: &str = "APP_CONTROL_PLANE_ADDR";
/// The join token string.
pub const JOIN_TOKEN: &str = "APP_JOIN_TOKEN";
/// A file holding the join token (how the cloud-init passes it).
pub const JOIN_TOKEN_FILE: &str = "APP_JOIN_TOKEN_FILE";
/// The node name to enroll as.
pub const NODE_NAME: &str = "APP_NODE_NAME";
/// Optional explicit CA pin; must agree with the token's.
pub const CA_FINGERPRINT: &str = "APP_CA_FINGERPRINT";
/// Where the node identity is kept.
pub const IDENTITY_FILE: &str = "APP_AGENT_IDENTITY_FILE";
/// Retry budget, in seconds, for reaching the control plane.
pub const ENROLL_RETRY_SECONDS: &str = "APP_ENROLL_RETRY_SECONDS";
/// The progress credential's header file the cloud-init wrote; deleted after enrolling.
pub const PROGRESS_CREDENTIAL_FILE: &str = "APP_PROGRESS_CREDENTIAL_FILE";
/// The tracing filter (process environment only).
pub const LOG_FILTER: &str = "LEVELRAIL_LOG";

/// Default of `APP_AGENT_IDENTITY_FILE`.
pub const DEFAULT_IDENTITY_FILE: &str = "/var/lib/levelrail-agent/identity.json";
/// Default of `APP_ENROLL_RETRY_SECONDS`: the life of a provision's join token (60 min), so
/// a node keeps trying as long as its token could still be redeemed.
pub const DEFAULT_ENROLL_RETRY_SECONDS: u64 = 3600;

const KNOWN: [&str; 9] = [
    ADDR,
    JOIN_TOKEN,
    JOIN_TOKEN_FILE,
    NODE_NAME,
    CA_FINGERPRINT,
    IDENTITY_FILE,
    ENROLL_RETRY_SECONDS,
    PROGRESS_CREDENTIAL_FILE,
    DOCKER_HOST,
];

/// Command-line flags of `levelrail-agent`.
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(
    name = "levelrail-agent",
    version,
    about = "Levelrail node agent: enrolls this machine with a join token and keeps a heartbeat.",
    long_about = "Levelrail node agent: pins the control-plane CA, redeems the join token, \
        stores the node identity and keeps a heartbeat. Settings come from the env file and \
        from process environment variables of the same names (the process environment wins): \
        APP_CONTROL_PLANE_ADDR, APP_JOIN_TOKEN or APP_JOIN_TOKEN_FILE, APP_NODE_NAME, \
        APP_CA_FINGERPRINT (optional: the token carries it), APP_AGENT_IDENTITY_FILE \
        (default /var/lib/levelrail-agent/identity.json), APP_ENROLL_RETRY_SECONDS \
        (default 3600), APP_PROGRESS_CREDENTIAL_FILE (deleted, with the join-token file, once \
        enrolled), DOCKER_HOST (the local Docker engine whose version each heartbeat \
        reports; default unix:///var/run/docker.sock). Logs go to stderr, filtered by \
        LEVELRAIL_LOG (default info).",
    after_help = EXIT_CODES_HELP
)]
pub struct Args {
    /// Env file written by the cloud-init (`KEY=VALUE` lines); process environment
    /// variables of the same names override it.
    #[arg(long, value_name = "PATH")]
    pub env_file: Option<PathBuf>,
    /// Enroll if needed, send one heartbeat, then exit 0.
    #[arg(long)]
    pub once: bool,
}

/// Reads one process environment variable; unset and empty are both `None`. The only
/// place the agent reads its environment.
pub fn process_env(name: &'static str) -> Result<Option<String>, AgentError> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(v) => v
            .into_string()
            .map(|s| Some(s).filter(|s| !s.is_empty()))
            .map_err(|_| AgentError::config(name, "is not valid UTF-8")),
    }
}

/// The merged configuration.
#[derive(Debug)]
pub struct Config {
    control_plane_addr: Option<ControlPlaneAddr>,
    token: Option<TokenSource>,
    node_name: Option<String>,
    ca_fingerprint: Option<Fingerprint>,
    /// Where the node identity is read from and written to.
    pub identity_file: PathBuf,
    /// How long to keep retrying an unreachable control plane.
    pub enroll_retry: Duration,
    /// Bootstrap secrets to delete once enrolled: the join-token file and the progress
    /// credential's header file (a node holds no bootstrap secret after it enrolled).
    pub bootstrap_files: Vec<PathBuf>,
    /// The local Docker engine's socket.
    pub docker: DockerHost,
}

/// Everything an enrollment needs, validated.
#[derive(Debug)]
pub struct Enrollment {
    /// The control plane.
    pub addr: ControlPlaneAddr,
    /// The join token.
    pub token: JoinToken,
    pub node_name: String,
    /// The CA pin (from the token, checked against `APP_CA_FINGERPRINT`).
    pub pin: Fingerprint,
}

enum TokenSource {
    Inline(SecretString),
    File(PathBuf),
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Inline(_) => f.write_str("Inline(<redacted>)"),
            TokenSource::File(p) => write!(f, "File({})", p.display()),
        }
    }
}

impl Config {
    /// Loads the configuration for `args` from the env file and the process environment.
    pub fn load(args: &Args) -> Result<Self, AgentError> {
        Self::from_sources(args.env_file.as_deref(), process_env)
    }

    /// Loads from an optional env file and an environment lookup (tests pass their own).
    pub fn from_sources(
        env_file: Option<&Path>,
        env: impl Fn(&'static str) -> Result<Option<String>, AgentError>,
    ) -> Result<Self, AgentError> {
        let file = match env_file {
            Some(path) => crate::envfile::read(path)?,
            None => BTreeMap::new(),
        };
        let mut process = BTreeMap::new();
        for name in KNOWN {
            if let Some(value) = env(name)? {
                process.insert(name, value);
            }
        }
        let from_file = |name: &str| file.get(name).filter(|v| !v.is_empty()).cloned();
        let get = |name: &'static str| process.get(name).cloned().or_else(|| from_file(name));

        let token = if process.contains_key(JOIN_TOKEN) || process.contains_key(JOIN_TOKEN_FILE) {
            token_source(
                process.get(JOIN_TOKEN).cloned(),
                process.get(JOIN_TOKEN_FILE).cloned(),
            )?
        } else {
            token_source(from_file(JOIN_TOKEN), from_file(JOIN_TOKEN_FILE))?
        };
        let control_plane_addr = get(ADDR).map(|v| ControlPlaneAddr::parse(&v)).transpose()?;
        let node_name = get(NODE_NAME)
            .map(|v| validate_node_name(&v).map(|()| v))
            .transpose()?;
        let ca_fingerprint = get(CA_FINGERPRINT)
            .map(|v| {
                Fingerprint::parse_lenient(&v).ok_or_else(|| {
                    AgentError::config(
                        CA_FINGERPRINT,
                        "must be 64 hex digits (SHA-256 of the CA certificate)",
                    )
                })
            })
            .transpose()?;
        let identity_file =
            PathBuf::from(get(IDENTITY_FILE).unwrap_or(DEFAULT_IDENTITY_FILE.into()));
        let seconds = match get(ENROLL_RETRY_SECONDS) {
            None => DEFAULT_ENROLL_RETRY_SECONDS,
            Some(v) => v.trim().parse().map_err(|_| {
                AgentError::config(ENROLL_RETRY_SECONDS, "must be a whole number of seconds")
            })?,
        };
        let mut bootstrap_files: Vec<PathBuf> = get(PROGRESS_CREDENTIAL_FILE)
            .map(PathBuf::from)
            .into_iter()
            .collect();
        if let Some(TokenSource::File(path)) = &token {
            bootstrap_files.insert(0, path.clone());
        }
        let docker = get(DOCKER_HOST)
            .map(|v| DockerHost::parse(&v))
            .transpose()?
            .unwrap_or_default();
        Ok(Self {
            control_plane_addr,
            token,
            node_name,
            ca_fingerprint,
            identity_file,
            enroll_retry: Duration::from_secs(seconds),
            bootstrap_files,
            docker,
        })
    }

    /// The configured control-plane address, if any.
    pub fn control_plane_addr(&self) -> Option<&ControlPlaneAddr> {
        self.control_plane_addr.as_ref()
    }

    /// The configured node name, if any.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// Validates what an enrollment needs: address, node name, token and pin. Reads the
    /// token file now (not earlier: an enrolled node may have had it deleted).
    pub fn enrollment(&self) -> Result<Enrollment, AgentError> {
        let missing = |var| AgentError::config(var, "is required to enroll (no node identity yet)");
        let addr = self
            .control_plane_addr
            .clone()
            .ok_or_else(|| missing(ADDR))?;
        let node_name = self.node_name.clone().ok_or_else(|| missing(NODE_NAME))?;
        let token = match &self.token {
            None => return Err(missing("APP_JOIN_TOKEN or APP_JOIN_TOKEN_FILE")),
            Some(TokenSource::Inline(raw)) => JoinToken::parse(raw.expose_secret())?,
            Some(TokenSource::File(path)) => {
                JoinToken::parse(read_token_file(path)?.expose_secret())?
            }
        };
        if self
            .ca_fingerprint
            .is_some_and(|explicit| explicit != token.fingerprint())
        {
            return Err(AgentError::PinConflict);
        }
        Ok(Enrollment {
            addr,
            pin: token.fingerprint(),
            token,
            node_name,
        })
    }
}

fn token_source(
    inline: Option<String>,
    file: Option<String>,
) -> Result<Option<TokenSource>, AgentError> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(AgentError::config(
            "APP_JOIN_TOKEN or APP_JOIN_TOKEN_FILE",
            "set only one of them",
        )),
        (Some(raw), None) => Ok(Some(TokenSource::Inline(SecretString::from(raw)))),
        (None, Some(path)) => Ok(Some(TokenSource::File(PathBuf::from(path)))),
        (None, None) => Ok(None),
    }
}

fn read_token_file(path: &Path) -> Result<SecretString, AgentError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AgentError::config(
            JOIN_TOKEN_FILE,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(AgentError::config(
            JOIN_TOKEN_FILE,
            format!("{} is empty", path.display()),
        ));
    }
    Ok(SecretString::from(token))
}

/// Node names: `^[a-z][a-z0-9-]*$`, at most 63 characters, no trailing hyphen.
fn validate_node_name(name: &str) -> Result<(), AgentError> {
    let valid = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(AgentError::config(
            NODE_NAME,
            "must match ^[a-z][a-z0-9-]*$, be at most 63 characters and not end with '-'",
        ))
    }
}

/// The control plane's agent listener address.
#[derive(Clone, PartialEq, Eq)]
pub struct ControlPlaneAddr {
    host: String,
    port: u16,
}

impl ControlPlaneAddr {
    /// Parses `host:port` or `[ipv6]:port`.
    pub fn parse(s: &str) -> Result<Self, AgentError> {
        let bad = || AgentError::config(ADDR, "must be host:port or [ipv6]:port");
        let s = s.trim();
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (host, port) = rest.split_once("]:").ok_or_else(bad)?;
            host.parse::<Ipv6Addr>().map_err(|_| bad())?;
            (host, port)
        } else {
            let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
            if host.is_empty() || host.contains(':') {
                return Err(bad());
            }
            ServerName::try_from(host).map_err(|_| bad())?;
            (host, port)
        };
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(bad)?;
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }

    /// The host part (name or IP, without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The TLS server name: the IP address, or the DNS name.
    pub fn server_name(&self) -> ServerName<'static> {
        match self.host.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            // `parse` validated the name.
            Err(_) => ServerName::try_from(self.host.clone())
                .unwrap_or(ServerName::IpAddress(IpAddr::from([0, 0, 0, 0]).into())),
        }
    }
}

impl fmt::Display for ControlPlaneAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Debug for ControlPlaneAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ControlPlaneAddr({self})")
    }
}

#[cfg(test)]
mod tests;
