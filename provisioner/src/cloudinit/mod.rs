//! The cloud-init user-data that turns a fresh cloud server into an enrolling node.
//!
//! [`render()`] builds a `#cloud-config` document (the original emitted `#cloud-init`, a
//! header cloud-init ignores, so its script never ran). The document:
//!
//! - writes `/etc/levelrail/agent.env` (`0600`, no secret: the variable names of the
//!   original, with `APP_JOIN_TOKEN_FILE` instead of the token itself), the join token
//!   (`/etc/levelrail/join-token`, `0600`), the control-plane CA (`/etc/levelrail/ca.pem`),
//!   the bearer header of the progress reports (`/etc/levelrail/progress.header`, `0600`),
//!   the `report-progress` script and the `levelrail-agent` systemd unit;
//! - installs Docker only when `docker` is missing, pulls the agent image (a release tag or
//!   a digest pin, never `edge`/`latest` by default) and starts the unit, reporting each
//!   [`InstallStep`](crate::domain::InstallStep) to the control plane's progress endpoint
//!   (`{"step":"docker_ready"}` with the join token as bearer) with curl over TLS that
//!   trusts only the embedded CA.
//!
//! The agent container gets the token as a read-only file mount, so `docker inspect`
//! shows a path, and no command line or process list ever holds it. Every input is
//! checked before anything is rendered ([`CloudInitParams`]), and every value is emitted
//! as a quoted YAML scalar or a literal block, so no input can change the document's
//! structure. [`extract_agent_bootstrap`] reads a rendered document back (demo mode boots a
//! real agent from it).
mod image;
mod params;
mod parse;
mod render;
mod yaml;

#[cfg(test)]
mod jsonschema;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate;

pub use image::{AgentImage, DEFAULT_AGENT_REPOSITORY};
pub use params::CloudInitParams;
pub use parse::{AgentBootstrap, extract_agent_bootstrap};
pub use render::render;

/// The agent's env file (root-only, holds no secret).
pub const ENV_FILE_PATH: &str = "/etc/levelrail/agent.env";
/// The join token, mounted read-only into the agent container.
pub const JOIN_TOKEN_PATH: &str = "/etc/levelrail/join-token";
/// The control-plane CA certificate(s) that curl trusts for progress reports.
pub const CA_PEM_PATH: &str = "/etc/levelrail/ca.pem";
/// The `Authorization` header of progress reports, read by `curl -H @file`.
pub const PROGRESS_HEADER_PATH: &str = "/etc/levelrail/progress.header";
/// The progress reporter: `report-progress <step>`.
pub const REPORT_PROGRESS_PATH: &str = "/usr/local/lib/levelrail/report-progress";
/// The systemd unit that runs the agent container.
pub const UNIT_PATH: &str = "/etc/systemd/system/levelrail-agent.service";
/// The systemd unit's name, which is also the container's name.
pub const UNIT_NAME: &str = "levelrail-agent";
/// The agent's data directory (created `0700`, mounted into the container).
pub const DATA_DIR: &str = "/var/lib/levelrail-agent-data";
/// Where the agent keeps its node identity after enrolling.
pub const IDENTITY_FILE_PATH: &str = "/var/lib/levelrail-agent-data/identity.json";

/// Why a document could not be rendered. The message names the parameter and never
/// contains the join token (nor, for that matter, any other input value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A parameter failed validation.
    #[error("invalid {param}: {reason}")]
    InvalidParameter {
        /// The parameter's name, e.g. `node_name` or `agent_image`.
        param: &'static str,
        /// What is wrong, without the value.
        reason: String,
    },
}

impl RenderError {
    /// The name of the parameter that was rejected.
    pub fn param(&self) -> &'static str {
        match self {
            RenderError::InvalidParameter { param, .. } => param,
        }
    }

    pub(crate) fn invalid(param: &'static str, reason: impl Into<String>) -> Self {
        RenderError::InvalidParameter {
            param,
            reason: reason.into(),
        }
    }
}

/// Why a user-data document could not be read back. Never contains the join token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The first line is not `#cloud-config`.
    #[error("the user-data does not start with #cloud-config")]
    NotCloudConfig,
    /// The document is not YAML of the expected shape (position only: the text may hold
    /// the token).
    #[error("the user-data is not a cloud-config mapping with write_files (near line {line})")]
    Yaml {
        /// 1-based line of the problem, 0 when unknown.
        line: usize,
    },
    /// A file the renderer always writes is missing.
    #[error("the user-data writes no {path}")]
    MissingFile {
        /// The file's path on the node.
        path: &'static str,
    },
    /// A file is present but not in the shape the renderer writes.
    #[error("{path} in the user-data is malformed: {reason}")]
    Malformed {
        /// The file's path on the node.
        path: &'static str,
        /// What is wrong, without the value.
        reason: &'static str,
    },
    /// A value read back fails the same validation [`render()`] applies.
    #[error("the user-data holds an invalid value: {0}")]
    Invalid(#[from] RenderError),
}
