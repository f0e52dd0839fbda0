//! The cloud-init user-data that turns a fresh cloud server into an enrolling node.
//!
//! [`render()`] builds a `#cloud-config` document (the original emitted `#cloud-init`, a
//! header cloud-init ignores, so its script never ran). The document:
//!
//! - writes `/etc/levelrail/agent.env` (`0600`, no secret: the variable names of the
//!   original, with file paths instead of the secrets), the join token and the progress
//!   credential (`0600` files in the agent's state directory, which the agent deletes once
//!   it has enrolled), the control-plane CA, the `report-progress`, `install-docker` and
//!   `install-agent` scripts and the `levelrail-agent` systemd unit;
//! - installs Docker only when `docker` is missing (workloads need it);
//! - downloads the control plane's own `levelrail-agent` for the node's CPU from the agent
//!   listener (curl trusting only the control-plane CA), checks it against the SHA-256 in
//!   the document, installs it `0755` and starts it under a hardened unit; or pulls an
//!   image pinned by digest when the operator configured one ([`AgentSource`]);
//! - reports each [`InstallStep`](levelrail_provisioner_model::InstallStep) to the progress endpoint
//!   with the provision's own progress credential, and a failed step with its reason (the
//!   provision then fails at once: a binary that fails its checksum never runs).
//!
//! Every input is checked before anything is rendered ([`CloudInitParams`]), and every
//! value is emitted as a quoted YAML scalar or a literal block, so no input can change the
//! document's structure. No command line ever holds a secret.
mod agent_source;
mod image;
mod params;
mod read;
mod render;
mod scripts;
mod yaml;

#[cfg(test)]
mod jsonschema;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate;

pub use agent_source::{AgentDownload, AgentSource};
pub use image::AgentImage;
pub use params::CloudInitParams;
pub use read::written_file;
pub use render::render;

/// The agent's env file (root-only, holds no secret).
pub const ENV_FILE_PATH: &str = "/etc/levelrail/agent.env";
/// The control-plane CA certificate(s) that curl trusts.
pub const CA_PEM_PATH: &str = "/etc/levelrail/ca.pem";
/// The agent's state directory: the only path its unit may write.
pub const STATE_DIR: &str = "/var/lib/levelrail-agent";
/// The join token (deleted by the agent after enrolling).
pub const JOIN_TOKEN_PATH: &str = "/var/lib/levelrail-agent/join-token";
/// The `Authorization` header of progress reports, read by `curl -H @file` (deleted by the
/// agent after enrolling).
pub const PROGRESS_HEADER_PATH: &str = "/var/lib/levelrail-agent/progress.header";
/// Where the agent keeps its node identity after enrolling.
pub const IDENTITY_FILE_PATH: &str = "/var/lib/levelrail-agent/identity.json";
/// The progress reporter: `report-progress STEP [ERROR]`.
pub const REPORT_PROGRESS_PATH: &str = "/usr/local/lib/levelrail/report-progress";
/// Installs Docker where it is missing.
pub const INSTALL_DOCKER_PATH: &str = "/usr/local/lib/levelrail/install-docker";
/// Fetches and verifies the agent.
pub const INSTALL_AGENT_PATH: &str = "/usr/local/lib/levelrail/install-agent";
/// Where the verified agent binary is installed.
pub const AGENT_BINARY_PATH: &str = "/usr/local/bin/levelrail-agent";
/// The systemd unit that runs the agent.
pub const UNIT_PATH: &str = "/etc/systemd/system/levelrail-agent.service";
/// The systemd unit's name (also the container's name with an image).
pub const UNIT_NAME: &str = "levelrail-agent";

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
