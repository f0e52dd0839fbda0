//! Rendering: the checked parameters become the `#cloud-config` document.
use zeroize::Zeroizing;

use super::params::Checked;
use super::yaml::{block, flow_seq, quote};
use super::{
    CA_PEM_PATH, CloudInitParams, DATA_DIR, ENV_FILE_PATH, IDENTITY_FILE_PATH, JOIN_TOKEN_PATH,
    PROGRESS_HEADER_PATH, REPORT_PROGRESS_PATH, RenderError, UNIT_NAME, UNIT_PATH,
};
use crate::domain::InstallStep;

/// The first line of every document; cloud-init ignores user-data with any other header.
pub(super) const HEADER: &str = "#cloud-config";
/// The env file's variables, named as in the original so existing scripts keep working.
pub(super) const ENV_ADDR: &str = "APP_CONTROL_PLANE_ADDR";
pub(super) const ENV_NODE_NAME: &str = "APP_NODE_NAME";
pub(super) const ENV_CA_FINGERPRINT: &str = "APP_CA_FINGERPRINT";
pub(super) const ENV_JOIN_TOKEN_FILE: &str = "APP_JOIN_TOKEN_FILE";
pub(super) const ENV_IDENTITY_FILE: &str = "APP_AGENT_IDENTITY_FILE";
/// The header line of the progress header file, before the token.
pub(super) const BEARER_PREFIX: &str = "Authorization: Bearer ";
/// The script line that holds the progress URL, before the single-quoted URL.
pub(super) const URL_LINE_PREFIX: &str = "url=";
/// The unit line that pulls the image, before the image reference.
pub(super) const PULL_LINE_PREFIX: &str = "ExecStartPre=/usr/bin/docker pull ";

/// One `write_files` entry.
struct WriteFile {
    path: &'static str,
    permissions: &'static str,
    /// Zeroized on drop: two of the files hold the join token.
    content: Zeroizing<String>,
}

/// Renders the user-data of one provision: a `#cloud-config` document. Every parameter is
/// validated first; the error names the parameter and never contains the token.
pub fn render(params: &CloudInitParams) -> Result<String, RenderError> {
    let checked = params.check()?;
    let files = [
        file(ENV_FILE_PATH, "0600", env_file(&checked)),
        file(JOIN_TOKEN_PATH, "0600", format!("{}\n", checked.join_token)),
        file(CA_PEM_PATH, "0644", checked.ca_pem.clone()),
        file(
            PROGRESS_HEADER_PATH,
            "0600",
            format!("{BEARER_PREFIX}{}\n", checked.join_token),
        ),
        file(
            REPORT_PROGRESS_PATH,
            "0755",
            report_progress_script(checked.progress_url),
        ),
        file(UNIT_PATH, "0644", unit_file(&checked.image)),
    ];
    let mut out = format!("{HEADER}\nwrite_files:\n");
    for f in &files {
        out.push_str(&format!("  - path: {}\n", quote(f.path)));
        out.push_str(&format!("    owner: {}\n", quote("root:root")));
        out.push_str(&format!("    permissions: {}\n", quote(f.permissions)));
        out.push_str(&format!(
            "    content: {}\n",
            Zeroizing::new(block(&f.content, 6)).as_str()
        ));
    }
    out.push_str("runcmd:\n");
    for command in runcmd(&checked.image) {
        out.push_str(&format!("  - {command}\n"));
    }
    Ok(out)
}

fn file(path: &'static str, permissions: &'static str, content: String) -> WriteFile {
    WriteFile {
        path,
        permissions,
        content: Zeroizing::new(content),
    }
}

/// The agent's environment: no secret, the token is referenced by path.
fn env_file(p: &Checked<'_>) -> String {
    [
        (ENV_ADDR, p.control_plane_addr),
        (ENV_NODE_NAME, p.node_name),
        (ENV_CA_FINGERPRINT, p.ca_fingerprint.as_str()),
        (ENV_JOIN_TOKEN_FILE, JOIN_TOKEN_PATH),
        (ENV_IDENTITY_FILE, IDENTITY_FILE_PATH),
    ]
    .iter()
    .map(|(key, value)| format!("{key}={value}\n"))
    .collect()
}

/// `report-progress <step>`: POSTs `{"step":"<step>"}` with the bearer header read from a
/// root-only file (never on a command line), trusting only the control-plane CA. It never
/// fails the boot.
fn report_progress_script(progress_url: &str) -> String {
    format!(
        r#"#!/bin/sh
# report-progress <step>: tells the Levelrail control plane how far this boot got.
# The token is read by curl from {PROGRESS_HEADER_PATH}, never from the command line.
# A report that cannot be delivered is dropped: it never fails the boot.
{URL_LINE_PREFIX}'{progress_url}'
step="${{1:-}}"
case "$step" in
  ''|*[!a-z_]*) echo "report-progress: invalid step name" >&2; exit 0 ;;
esac
curl -fsS --retry 5 --retry-all-errors --retry-max-time 60 --connect-timeout 5 --max-time 15 \
  --cacert {CA_PEM_PATH} \
  -H @{PROGRESS_HEADER_PATH} \
  -H 'Content-Type: application/json' \
  --data "{{\"step\":\"$step\"}}" \
  "$url" >/dev/null || true
exit 0
"#
    )
}

/// The agent as a systemd-managed container. The token reaches it as a read-only file
/// mount, so `docker inspect` shows only the path. `--user 0:0` (as in the original's
/// newer unit) lets an image whose default user is unprivileged read the root-only token
/// and write the `0700` data directory.
fn unit_file(image: &str) -> String {
    format!(
        "[Unit]
Description=Levelrail node agent
After=network-online.target docker.service
Requires=docker.service
Wants=network-online.target

[Service]
ExecStartPre=-/usr/bin/docker rm -f {UNIT_NAME}
{PULL_LINE_PREFIX}{image}
ExecStart=/usr/bin/docker run --rm --name {UNIT_NAME} --user 0:0 --network host \
--env-file {ENV_FILE_PATH} \
-v {JOIN_TOKEN_PATH}:{JOIN_TOKEN_PATH}:ro \
-v {DATA_DIR}:{DATA_DIR} {image}
Restart=on-failure
RestartSec=5
TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
"
    )
}

/// The boot commands. Values go in list form (no shell parsing); shell strings hold only
/// fixed text.
fn runcmd(image: &str) -> Vec<String> {
    let report = |step: InstallStep| format!("{REPORT_PROGRESS_PATH} {}", step.as_str());
    vec![
        quote("command -v docker >/dev/null 2>&1 || (curl -fsSL https://get.docker.com | sh)"),
        quote(&format!(
            "systemctl enable --now docker && {}",
            report(InstallStep::DockerReady)
        )),
        flow_seq(&["mkdir", "-p", DATA_DIR]),
        flow_seq(&["chmod", "0700", DATA_DIR]),
        flow_seq(&[
            "sh",
            "-c",
            &format!("docker pull \"$1\" && {}", report(InstallStep::ImagePulled)),
            "levelrail-pull",
            image,
        ]),
        flow_seq(&["systemctl", "daemon-reload"]),
        quote(&format!(
            "systemctl enable --now {UNIT_NAME} && {}",
            report(InstallStep::AgentStarted)
        )),
    ]
}
