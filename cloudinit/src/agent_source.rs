//! Where a node gets its agent: the control plane's own `levelrail-agent` binary,
//! downloaded from the agent listener and checked against the SHA-256 pinned in the
//! document (the default), or a registry image pinned by digest.
use super::params::{check_https_url, plain_ascii};
use super::{AgentImage, RenderError};
use levelrail_types::CpuArch;

const PARAM: &str = "agent";

/// The agent a node runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    /// The control plane's own binaries (one per CPU architecture it ships).
    Binary(AgentDownload),
    /// A registry image pinned by digest (`--agent-image`).
    Image(AgentImage),
}

/// The binaries a node may download: `<base_url>/<arch>/levelrail-agent`, each with the
/// lowercase hex SHA-256 the node checks before installing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDownload {
    /// `https://<agent listener>/v1/agent/<version>` (no trailing `/`).
    pub base_url: String,
    /// Per architecture, the binary's SHA-256 (64 hex digits).
    pub sha256: Vec<(CpuArch, String)>,
}

impl AgentDownload {
    /// The download URL of the binary for `arch`.
    pub fn url(&self, arch: CpuArch) -> String {
        format!("{}/{arch}/levelrail-agent", self.base_url)
    }
}

impl AgentSource {
    /// Why a node on `arch` could not run this agent; `None` when it can. An image may be
    /// multi-architecture, so it is taken to cover every architecture.
    pub fn unavailable_on(&self, arch: CpuArch) -> Option<String> {
        match self {
            AgentSource::Image(_) => None,
            AgentSource::Binary(download) => {
                let served: Vec<&str> = download.sha256.iter().map(|(a, _)| a.as_str()).collect();
                (!served.contains(&arch.as_str())).then(|| {
                    format!(
                        "no levelrail-agent binary for {arch} is served (this control plane has {}); \
                         add one with --agent-binary",
                        served.join(", ")
                    )
                })
            }
        }
    }

    /// Checks the source; the error names `agent` (or `agent_image`).
    pub(super) fn validate(&self) -> Result<(), RenderError> {
        match self {
            AgentSource::Image(image) => image.validate(),
            AgentSource::Binary(download) => {
                check_https_url(PARAM, &download.base_url)?;
                if download.base_url.ends_with('/') {
                    return Err(RenderError::invalid(
                        PARAM,
                        "the download base URL must not end with '/'",
                    ));
                }
                if download.sha256.is_empty() {
                    return Err(RenderError::invalid(
                        PARAM,
                        "needs the SHA-256 of at least one agent binary",
                    ));
                }
                let mut seen = Vec::new();
                for (arch, sum) in &download.sha256 {
                    if seen.contains(arch) {
                        return Err(RenderError::invalid(
                            PARAM,
                            format!("names the {arch} binary twice"),
                        ));
                    }
                    seen.push(*arch);
                    plain_ascii(PARAM, sum, 64)?;
                    let hex = sum.len() == 64
                        && sum
                            .bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                    if !hex {
                        return Err(RenderError::invalid(
                            PARAM,
                            "a SHA-256 must be 64 lowercase hex digits",
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}
