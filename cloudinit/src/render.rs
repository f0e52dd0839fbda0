//! Rendering: the checked parameters become the `#cloud-config` document.
use zeroize::Zeroizing;

use super::params::Checked;
use super::scripts::{install_agent_script, install_docker_script, report_progress_script};
use super::yaml::{flow_seq, push_block, push_quoted, quote};
use super::{
    AGENT_BINARY_PATH, AgentSource, CA_PEM_PATH, CloudInitParams, ENV_FILE_PATH,
    IDENTITY_FILE_PATH, INSTALL_AGENT_PATH, INSTALL_DOCKER_PATH, JOIN_TOKEN_PATH,
    PROGRESS_HEADER_PATH, REPORT_PROGRESS_PATH, RenderError, STATE_DIR, UNIT_NAME, UNIT_PATH,
};
use levelrail_provisioner_model::InstallStep;

/// The first line of every document; cloud-init ignores user-data with any other header.
pub(super) const HEADER: &str = "#cloud-config";
/// The env file's variables, named as in the original so existing scripts keep working.
pub(super) const ENV_ADDR: &str = "APP_CONTROL_PLANE_ADDR";
pub(super) const ENV_NODE_NAME: &str = "APP_NODE_NAME";
pub(super) const ENV_CA_FINGERPRINT: &str = "APP_CA_FINGERPRINT";
pub(super) const ENV_JOIN_TOKEN_FILE: &str = "APP_JOIN_TOKEN_FILE";
pub(super) const ENV_IDENTITY_FILE: &str = "APP_AGENT_IDENTITY_FILE";
pub(super) const ENV_PROGRESS_FILE: &str = "APP_PROGRESS_CREDENTIAL_FILE";
pub(super) const ENV_DOCKER_HOST: &str = "DOCKER_HOST";
/// The local Docker socket the agent uses.
pub(super) const DOCKER_HOST: &str = "unix:///var/run/docker.sock";
/// The header line of the progress header file, before the credential.
pub(super) const BEARER_PREFIX: &str = "Authorization: Bearer ";

/// One `write_files` entry.
struct WriteFile {
    path: &'static str,
    permissions: &'static str,
    /// Zeroized on drop: two of the files hold secrets.
    content: Zeroizing<String>,
}

/// Renders the user-data of one provision: a `#cloud-config` document. Every parameter is
/// validated first; the error names the parameter and never contains a secret.
pub fn render(params: &CloudInitParams) -> Result<String, RenderError> {
    let checked = params.check()?;
    let files = [
        file(ENV_FILE_PATH, "0600", env_file(&checked)),
        file(JOIN_TOKEN_PATH, "0600", format!("{}\n", checked.join_token)),
        file(
            PROGRESS_HEADER_PATH,
            "0600",
            format!("{BEARER_PREFIX}{}\n", checked.progress_credential),
        ),
        file(CA_PEM_PATH, "0644", checked.ca_pem.clone()),
        file(
            REPORT_PROGRESS_PATH,
            "0755",
            report_progress_script(checked.progress_url),
        ),
        file(INSTALL_DOCKER_PATH, "0755", install_docker_script()),
        file(
            INSTALL_AGENT_PATH,
            "0755",
            install_agent_script(checked.agent),
        ),
        file(UNIT_PATH, "0644", unit_file(checked.agent)),
    ];
    // Sized for the whole document up front: two of the files hold secrets, and a buffer
    // that grows leaves copies of what it held in memory it gave back. (A content that
    // must be quoted rather than blocked may still outgrow it.)
    let size = files
        .iter()
        .map(|f| {
            let lines = f.content.bytes().filter(|&b| b == b'\n').count() + 1;
            ENTRY_SIZE + f.path.len() + f.content.len() + lines * CONTENT_INDENT
        })
        .sum::<usize>();
    let mut out = String::with_capacity(HEADER.len() + RUNCMD_SIZE + size);
    out.push_str(HEADER);
    out.push_str("\nwrite_files:\n");
    for f in &files {
        out.push_str("  - path: ");
        push_quoted(&mut out, f.path);
        out.push_str("\n    owner: ");
        push_quoted(&mut out, "root:root");
        out.push_str("\n    permissions: ");
        push_quoted(&mut out, f.permissions);
        out.push_str("\n    content: ");
        push_block(&mut out, &f.content, CONTENT_INDENT);
        out.push('\n');
    }
    out.push_str("runcmd:\n");
    for command in runcmd() {
        out.push_str("  - ");
        out.push_str(&command);
        out.push('\n');
    }
    Ok(out)
}

/// The indentation of a file's content block.
const CONTENT_INDENT: usize = 6;
/// An upper bound of a `write_files` entry's text besides its path and content.
const ENTRY_SIZE: usize = 96;
/// An upper bound of the `runcmd` section.
const RUNCMD_SIZE: usize = 1024;

fn file(path: &'static str, permissions: &'static str, content: String) -> WriteFile {
    WriteFile {
        path,
        permissions,
        content: Zeroizing::new(content),
    }
}

/// The agent's environment: no secret, the token and the progress credential are
/// referenced by path (the agent deletes both files once it has enrolled).
fn env_file(p: &Checked<'_>) -> String {
    [
        (ENV_ADDR, p.control_plane_addr),
        (ENV_NODE_NAME, p.node_name),
        (ENV_CA_FINGERPRINT, p.ca_fingerprint.as_str()),
        (ENV_JOIN_TOKEN_FILE, JOIN_TOKEN_PATH),
        (ENV_IDENTITY_FILE, IDENTITY_FILE_PATH),
        (ENV_PROGRESS_FILE, PROGRESS_HEADER_PATH),
        (ENV_DOCKER_HOST, DOCKER_HOST),
    ]
    .iter()
    .map(|(key, value)| format!("{key}={value}\n"))
    .collect()
}

/// The hardening shared by both ways of running the agent's unit.
const HARDENING: &str = "NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=/var/lib/levelrail-agent
ProtectHome=yes
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes
SystemCallArchitectures=native
UMask=0077
";

/// The agent's systemd unit. The binary runs directly, without capabilities, on a
/// read-only system where only its state directory is writable. The image variant runs
/// the pinned image through the local Docker (which needs the Docker socket and so keeps
/// the capabilities Docker's client needs).
pub(super) fn unit_file(agent: &AgentSource) -> String {
    let service = match agent {
        AgentSource::Binary(_) => format!(
            "ExecStart={AGENT_BINARY_PATH} --env-file {ENV_FILE_PATH}
PrivateDevices=yes
ProtectHostname=yes
RestrictNamespaces=yes
MemoryDenyWriteExecute=yes
SystemCallFilter=@system-service
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
CapabilityBoundingSet=
AmbientCapabilities=
"
        ),
        AgentSource::Image(image) => format!(
            "ExecStartPre=-/usr/bin/docker rm -f {UNIT_NAME}
ExecStart=/usr/bin/docker run --rm --name {UNIT_NAME} --user 0:0 --network host \
--env-file {ENV_FILE_PATH} -v {STATE_DIR}:{STATE_DIR} {image}
ExecStop=/usr/bin/docker stop {UNIT_NAME}
"
        ),
    };
    let requires = match agent {
        AgentSource::Binary(_) => "Wants=network-online.target docker.service",
        AgentSource::Image(_) => "Wants=network-online.target\nRequires=docker.service",
    };
    format!(
        "[Unit]
Description=Levelrail node agent
Documentation=levelrail-agent --help
{requires}
After=network-online.target docker.service

[Service]
Type=exec
{service}Restart=on-failure
RestartSec=5
StateDirectory=levelrail-agent
StateDirectoryMode=0700
{HARDENING}
[Install]
WantedBy=multi-user.target
"
    )
}

/// The boot commands. Shell strings hold only fixed text; a failed step reports why.
fn runcmd() -> Vec<String> {
    let report = |step: InstallStep| format!("{REPORT_PROGRESS_PATH} {}", step.as_str());
    vec![
        quote(&format!(
            "command -v docker >/dev/null 2>&1 || {INSTALL_DOCKER_PATH}"
        )),
        quote(&format!(
            "systemctl enable --now docker && {ready} || {ready} 'Docker is not installed or does not start'",
            ready = report(InstallStep::DockerReady)
        )),
        flow_seq(&["chmod", "0700", STATE_DIR]),
        quote(&format!(
            "{INSTALL_AGENT_PATH} && {{ systemctl daemon-reload && systemctl enable --now {UNIT_NAME} \
             && {started} || {started} 'the levelrail-agent unit did not start'; }}",
            started = report(InstallStep::AgentStarted)
        )),
    ]
}
