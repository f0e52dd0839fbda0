//! The shell scripts the document installs under `/usr/local/lib/levelrail/`. They run as
//! root under `/bin/sh` (POSIX, no bashisms) on the node, and unchanged in the tests' boot
//! harness and the real-boot container.
use super::{
    AGENT_BINARY_PATH, AgentSource, CA_PEM_PATH, PROGRESS_HEADER_PATH, REPORT_PROGRESS_PATH,
};
use levelrail_provisioner_model::InstallStep;

/// The line of `report-progress` that holds the progress URL, before the quoted URL.
pub(super) const URL_LINE_PREFIX: &str = "url=";

/// `report-progress STEP [ERROR]`: POSTs `{"step":"STEP"}`, or with ERROR
/// `{"step":"STEP","error":"ERROR"}` (the provision then fails at once with that reason),
/// with the bearer header read from a root-only file (never on a command line), trusting
/// only the control-plane CA. It never fails the boot.
pub(super) fn report_progress_script(progress_url: &str) -> String {
    format!(
        r#"#!/bin/sh
# report-progress STEP [ERROR]: tells the Levelrail control plane how far this boot got,
# or that STEP failed and why. The credential is read by curl from the header file, never
# from the command line; the agent deletes that file once the node is enrolled, and the
# control plane refuses it from then on. Only transient failures are retried (refused
# connections, timeouts, 408/429/5xx); a refusal (401 once the node is enrolled) ends the
# report at once. A report that cannot be delivered is dropped: it never fails the boot.
{URL_LINE_PREFIX}'{progress_url}'
header={PROGRESS_HEADER_PATH}
step="${{1:-}}"
case "$step" in
  ''|*[!a-z_]*) echo "report-progress: invalid step name" >&2; exit 0 ;;
esac
[ -r "$header" ] || exit 0
if [ -n "${{2:-}}" ]; then
  # Only characters that need no JSON escaping, at most 300 of them.
  error=$(printf '%s' "$2" | tr -cd 'A-Za-z0-9 ._:,()/=+-' | cut -c1-300)
  body="{{\"step\":\"$step\",\"error\":\"$error\"}}"
  echo "levelrail: $step failed: $error" >&2
else
  body="{{\"step\":\"$step\"}}"
fi
curl -fsS --retry 5 --retry-connrefused --retry-max-time 60 --connect-timeout 5 --max-time 15 \
  --cacert {CA_PEM_PATH} \
  -H @"$header" \
  -H 'Content-Type: application/json' \
  --data "$body" \
  "$url" >/dev/null || true
exit 0
"#
    )
}

/// `install-docker`: Docker for the node's workloads, run only when `docker` is missing:
/// the distribution's `docker.io` where `apt-get` exists, else Docker's install script.
pub(super) fn install_docker_script() -> String {
    r#"#!/bin/sh
# install-docker: installs Docker (workloads need it); runcmd calls it only when docker is
# missing. The distribution's docker.io package where apt-get exists, otherwise Docker's
# own install script.
set -eu
if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends docker.io
else
  curl -fsSL --retry 5 --connect-timeout 10 https://get.docker.com -o /run/get-docker.sh
  sh /run/get-docker.sh
  rm -f /run/get-docker.sh
fi
"#
    .to_owned()
}

/// `install-agent`: fetches and verifies the agent, reporting `agent_verified` (or its
/// failure, after which the agent never runs).
pub(super) fn install_agent_script(agent: &AgentSource) -> String {
    let step = InstallStep::AgentVerified.as_str();
    match agent {
        AgentSource::Binary(download) => {
            let cases: String = download
                .sha256
                .iter()
                .map(|(arch, sum)| {
                    format!("  {}) arch={arch}; sum={sum} ;;\n", arch.uname_pattern())
                })
                .collect();
            format!(
                r#"#!/bin/sh
# install-agent: downloads this control plane's levelrail-agent for this machine's CPU
# (curl trusting only the control-plane CA), checks it against the SHA-256 pinned in this
# document and installs it 0755 (root-owned: cloud-init runs this as root). On any failure
# nothing is installed, the failure is reported with its reason, and the script exits 1.
set -u
report={REPORT_PROGRESS_PATH}
base='{base}'
machine=$(uname -m)
case "$machine" in
{cases}  *) "$report" {step} "no levelrail-agent binary for CPU architecture $machine"; exit 1 ;;
esac
dir=$(dirname {AGENT_BINARY_PATH})
mkdir -p "$dir"
tmp=$(mktemp "$dir/.levelrail-agent.XXXXXX") || {{ "$report" {step} "cannot create a file in $dir"; exit 1; }}
if ! curl -fsS --retry 10 --retry-connrefused --retry-max-time 300 --connect-timeout 10 --max-time 600 \
    --cacert {CA_PEM_PATH} -o "$tmp" "$base/$arch/levelrail-agent"; then
  rm -f "$tmp"
  "$report" {step} "downloading the agent binary from $base/$arch failed"
  exit 1
fi
if ! printf '%s  %s\n' "$sum" "$tmp" | sha256sum -c --status; then
  got=$(sha256sum "$tmp" | cut -d ' ' -f 1)
  rm -f "$tmp"
  "$report" {step} "the agent binary failed its SHA-256 check: expected $sum, got $got"
  exit 1
fi
if ! chmod 0755 "$tmp" || ! mv -f "$tmp" {AGENT_BINARY_PATH}; then
  rm -f "$tmp"
  "$report" {step} "installing the agent binary failed"
  exit 1
fi
"$report" {step}
"#,
                base = download.base_url,
            )
        }
        AgentSource::Image(image) => format!(
            r#"#!/bin/sh
# install-agent: pulls the agent image pinned by digest (Docker checks the digest).
set -u
report={REPORT_PROGRESS_PATH}
if docker pull '{image}'; then
  "$report" {step}
else
  "$report" {step} "pulling the agent image failed"
  exit 1
fi
"#
        ),
    }
}
