//! The node registry's types: node ids, node records, workload kinds, join-token roles and
//! the cloud-init install steps a provisioned node reports.
use std::fmt;

use levelrail_types::ProviderId;
use time::{Duration, OffsetDateTime};

use super::names::{FieldError, NodeName};

/// How often an agent is asked to heartbeat.
pub const HEARTBEAT_INTERVAL: Duration = Duration::seconds(30);
/// A node is online while its last heartbeat is at most this old (three missed beats).
pub const LIVENESS_WINDOW: Duration = Duration::seconds(90);

/// The prefix of every node id.
pub const NODE_ID_PREFIX: &str = "node_";

/// A node's id: `node_` + 32 lowercase hex digits (a random UUID). It is the common name of
/// the node's client certificate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(String);

impl NodeId {
    /// A fresh random id.
    pub fn generate() -> Self {
        NodeId(format!("{NODE_ID_PREFIX}{}", uuid::Uuid::new_v4().simple()))
    }

    /// Validates an id given in the field `id`.
    pub fn parse(value: &str) -> Result<Self, FieldError> {
        Self::parse_as(value, "id")
    }

    /// Validates an id given in the field `field`. The error never echoes the value.
    pub fn parse_as(value: &str, field: &'static str) -> Result<Self, FieldError> {
        let valid = value.strip_prefix(NODE_ID_PREFIX).is_some_and(|hex| {
            hex.len() == 32
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(NodeId(value.to_owned()))
        } else {
            Err(FieldError::new(
                field,
                "is not a node id (node_ followed by 32 hex digits)",
            ))
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    /// Application containers.
    Apps,
    /// Image builds.
    Builds,
}

impl WorkloadKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Apps => "apps",
            WorkloadKind::Builds => "builds",
        }
    }

    /// The kind a stored name denotes.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "apps" => Some(WorkloadKind::Apps),
            "builds" => Some(WorkloadKind::Builds),
            _ => None,
        }
    }
}

/// The role a join token enrolls its node in; it decides the node's workload kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// A plain node: runs apps.
    #[default]
    General,
    /// A build node: runs builds.
    Build,
}

impl Role {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::General => "general",
            Role::Build => "build",
        }
    }

    /// The role a stored name denotes.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "general" => Some(Role::General),
            "build" => Some(Role::Build),
            _ => None,
        }
    }

    /// The workload kinds of a node enrolled with this role.
    pub fn workload_kinds(self) -> Vec<WorkloadKind> {
        match self {
            Role::General => vec![WorkloadKind::Apps],
            Role::Build => vec![WorkloadKind::Builds],
        }
    }
}

/// A cloud-init step a provisioned node reports while `installing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InstallStep {
    /// Docker is installed and running.
    DockerReady,
    /// The agent was fetched and verified: the control plane's binary downloaded and its
    /// SHA-256 checked, or the digest-pinned image pulled.
    AgentVerified,
    /// The agent's systemd unit was started.
    AgentStarted,
}

impl InstallStep {
    /// Every step, in the order cloud-init reports them.
    pub const ALL: [InstallStep; 3] = [
        InstallStep::DockerReady,
        InstallStep::AgentVerified,
        InstallStep::AgentStarted,
    ];

    /// The wire and stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            InstallStep::DockerReady => "docker_ready",
            InstallStep::AgentVerified => "agent_verified",
            InstallStep::AgentStarted => "agent_started",
        }
    }

    /// Validates a step given in the field `step`.
    pub fn parse(value: &str) -> Result<Self, FieldError> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == value)
            .ok_or_else(|| {
                FieldError::new(
                    "step",
                    "must be one of docker_ready, agent_verified, agent_started",
                )
            })
    }
}

/// The longest failure reason kept from a node (the cloud-init script sends at most 300
/// characters; anything longer is cut).
pub const NODE_ERROR_MAX: usize = 300;

/// A node's failure text as an operator reads it in a failure reason: one line of
/// printable ASCII (anything else becomes a space), whitespace runs folded, at most
/// [`NODE_ERROR_MAX`] characters.
pub fn clean_node_error(error: &str) -> String {
    let line: String = error
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                ' '
            }
        })
        .take(NODE_ERROR_MAX)
        .collect();
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The body of a progress report a booting node sends to `POST /v1/provision-progress`:
/// `{"step":"docker_ready"}`, or `{"step":"agent_verified","error":"…"}` when the step
/// failed on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressReport {
    /// The step reached (or failed).
    pub step: InstallStep,
    /// Why the step failed, cleaned ([`clean_node_error`]); `None` when it succeeded.
    pub error: Option<String>,
}

impl ProgressReport {
    /// The largest body accepted, in bytes: a step name and a 300-character reason, with
    /// room for JSON escapes.
    pub const MAX_BODY: usize = 8 * 1024;

    /// Decodes a report body: one JSON object with `step` (an [`InstallStep`]) and,
    /// optionally, `error` (a string or `null`; an empty or all-blank one counts as none).
    /// Any other field is refused. Errors name the field (`body` for the JSON itself) and
    /// never repeat the body.
    pub fn from_json(body: &[u8]) -> Result<Self, FieldError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Body {
            step: String,
            #[serde(default)]
            error: Option<String>,
        }
        if body.len() > Self::MAX_BODY {
            return Err(FieldError::new(
                "body",
                format!("is larger than {} bytes", Self::MAX_BODY),
            ));
        }
        let body: Body = serde_json::from_slice(body).map_err(|e| {
            use serde_json::error::Category;
            let what = match e.classify() {
                Category::Data => "is not a progress report (expected {\"step\": \"…\", \"error\": \"…\"} with no other field)",
                Category::Syntax | Category::Eof | Category::Io => "is not valid JSON",
            };
            FieldError::new("body", format!("{what} (line {}, column {})", e.line(), e.column()))
        })?;
        Ok(ProgressReport {
            step: InstallStep::parse(&body.step)?,
            error: body
                .error
                .map(|e| clean_node_error(&e))
                .filter(|e| !e.is_empty()),
        })
    }
}

/// One install step as the node's cloud-init reported it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct InstallReport {
    pub step: InstallStep,
    /// When it was first reported.
    pub reported_at: OffsetDateTime,
    /// Why it failed, when the node reported a failure (one clean line).
    pub error: Option<String>,
}

/// Whether a node has heartbeated recently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Last heartbeat within [`LIVENESS_WINDOW`].
    Online,
    /// No heartbeat within [`LIVENESS_WINDOW`].
    Offline,
}

/// An enrolled node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its id (the CN of its client certificate).
    pub id: NodeId,
    /// Its unique name.
    pub name: NodeName,
    /// The addresses it last reported.
    pub addresses: Vec<String>,
    /// The agent version it last reported.
    pub agent_version: String,
    /// The Docker engine version its last heartbeat reported; `None` when no engine
    /// answered (or it has not heartbeated since enrolling).
    pub docker_version: Option<String>,
    /// What it runs.
    pub workload_kinds: Vec<WorkloadKind>,
    /// The provision that created it, when any.
    pub provision_id: Option<String>,
    /// When it enrolled.
    pub enrolled_at: OffsetDateTime,
    /// When it last heartbeated (initially its enrollment).
    pub last_seen_at: OffsetDateTime,
    /// Serial number of its client certificate (hex).
    pub cert_serial: String,
    /// SHA-256 of its client certificate's DER (lowercase hex).
    pub cert_fingerprint: String,
    /// When its client certificate expires.
    pub cert_expires_at: OffsetDateTime,
    /// The server its provision created, when it came from one (read from the provision).
    pub server: Option<NodeServer>,
}

/// Where a provisioned node runs: its provision's cloud, region and size, and the server's
/// id at that cloud (once the create answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeServer {
    pub provider: ProviderId,
    pub region: String,
    pub size: String,
    pub server_id: Option<String>,
}

/// Which nodes a listing returns; `None` in a field means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFilter {
    /// Nodes last seen at or after this time (online ones, with the liveness cutoff).
    pub seen_since: Option<OffsetDateTime>,
    /// Nodes last seen before this time (offline ones).
    pub seen_before: Option<OffsetDateTime>,
    /// Nodes a provision created at this cloud.
    pub provider: Option<ProviderId>,
    /// Nodes that accept this kind of workload.
    pub workload_kind: Option<WorkloadKind>,
}

impl NodeFilter {
    /// Whether `node` passes the filter.
    pub fn matches(&self, node: &Node) -> bool {
        self.seen_since.is_none_or(|t| node.last_seen_at >= t)
            && self.seen_before.is_none_or(|t| node.last_seen_at < t)
            && self
                .provider
                .is_none_or(|p| node.server.as_ref().is_some_and(|s| s.provider == p))
            && self
                .workload_kind
                .is_none_or(|k| node.workload_kinds.contains(&k))
    }

    /// The filter of nodes with `liveness` at `now`.
    pub fn with_liveness(mut self, liveness: Liveness, now: OffsetDateTime) -> Self {
        let cutoff = now - LIVENESS_WINDOW;
        match liveness {
            Liveness::Online => self.seen_since = Some(cutoff),
            Liveness::Offline => self.seen_before = Some(cutoff),
        }
        self
    }
}

impl Node {
    /// Whether the node counts as online at `now`.
    pub fn liveness(&self, now: OffsetDateTime) -> Liveness {
        if now - self.last_seen_at <= LIVENESS_WINDOW {
            Liveness::Online
        } else {
            Liveness::Offline
        }
    }
}

/// Lowercase hex SHA-256 of a DER certificate: a node certificate's recorded fingerprint,
/// and the control-plane CA pin a join token carries.
pub fn fingerprint_der(der: &[u8]) -> String {
    use sha2::{Digest as _, Sha256};
    hex::encode(Sha256::digest(der))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_node_ids_parse_and_differ() {
        let a = NodeId::generate();
        let b = NodeId::generate();
        assert_ne!(a, b);
        assert_eq!(NodeId::parse(a.as_str()).expect("parses"), a);
        assert_eq!(a.as_str().len(), NODE_ID_PREFIX.len() + 32);
    }

    #[test]
    fn malformed_node_ids_are_rejected_without_echo() {
        for bad in [
            "",
            "node_",
            "node_XYZ",
            "njt_0123456789abcdef",
            "node_'; DROP TABLE x;--",
        ] {
            let err = NodeId::parse(bad).expect_err(bad);
            assert_eq!(err.field, "id");
            assert!(!err.message.contains("DROP"), "{err}");
        }
    }

    #[test]
    fn a_build_role_gives_build_workloads_and_general_gives_apps() {
        assert_eq!(Role::Build.workload_kinds(), vec![WorkloadKind::Builds]);
        assert_eq!(Role::General.workload_kinds(), vec![WorkloadKind::Apps]);
        assert_eq!(Role::default(), Role::General);
    }

    #[test]
    fn names_round_trip_for_roles_kinds_and_steps() {
        for r in [Role::General, Role::Build] {
            assert_eq!(Role::from_name(r.as_str()), Some(r));
        }
        for k in [WorkloadKind::Apps, WorkloadKind::Builds] {
            assert_eq!(WorkloadKind::from_name(k.as_str()), Some(k));
        }
        for s in InstallStep::ALL {
            assert_eq!(InstallStep::parse(s.as_str()), Ok(s));
        }
        assert_eq!(
            InstallStep::parse("rm -rf /").expect_err("unknown").field,
            "step"
        );
    }

    #[test]
    fn a_node_is_online_until_the_liveness_window_passes() {
        let t = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let node = Node {
            id: NodeId::generate(),
            name: NodeName::parse("web-1").expect("name"),
            addresses: vec![],
            agent_version: "1.0.0".into(),
            docker_version: Some("26.1.5".into()),
            workload_kinds: vec![WorkloadKind::Apps],
            provision_id: None,
            enrolled_at: t,
            last_seen_at: t,
            cert_serial: "01".into(),
            cert_fingerprint: "00".repeat(32),
            cert_expires_at: t + Duration::days(365),
            server: None,
        };
        assert_eq!(node.liveness(t + LIVENESS_WINDOW), Liveness::Online);
        assert_eq!(
            node.liveness(t + LIVENESS_WINDOW + Duration::seconds(1)),
            Liveness::Offline
        );
    }
}

/// What a heartbeat reports about a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeartbeatReport {
    pub addresses: Vec<String>,
    pub agent_version: String,
    /// Its Docker engine's version; `None` when the engine did not answer.
    pub docker_version: Option<String>,
}
