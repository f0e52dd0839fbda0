//! The node's PATH in the harness: the real tools the document uses (linked from this
//! machine) and recording stubs for `docker`, `systemctl` and `apt-get`. Every stub call is
//! appended to `.harness/record`. `systemctl enable --now UNIT` / `start UNIT` runs the
//! unit's `ExecStart` in the background (its `StateDirectory` created `0700` first), the
//! way systemd would, and keeps its pid in `.harness/UNIT.pid`.
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The real tools a node image has that the document and its scripts use.
const TOOLS: [&str; 28] = [
    "sh",
    "curl",
    "sha256sum",
    "mktemp",
    "chmod",
    "chown",
    "mv",
    "rm",
    "mkdir",
    "cut",
    "tr",
    "uname",
    "cat",
    "dirname",
    "sed",
    "grep",
    "head",
    "sleep",
    "id",
    "ln",
    "cp",
    "touch",
    "printf",
    "echo",
    "env",
    "nohup",
    "kill",
    "test",
];

/// Directories searched for the real tools.
const SEARCH: [&str; 4] = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

const DOCKER: &str = r#"#!/bin/sh
# Stub docker: records the call; `docker pull` and `docker run` succeed without a daemon.
echo "docker $*" >> "$LEVELRAIL_HARNESS_ROOT/.harness/record"
exit 0
"#;

const APT_GET: &str = r#"#!/bin/sh
# Stub apt-get: records the call; installing docker.io puts the docker stub on PATH.
echo "apt-get $*" >> "$LEVELRAIL_HARNESS_ROOT/.harness/record"
case " $* " in
  *" install "*docker.io*) cp "$LEVELRAIL_HARNESS_ROOT/.harness/docker.stub" "$LEVELRAIL_HARNESS_ROOT/.harness/bin/docker"
    chmod 0755 "$LEVELRAIL_HARNESS_ROOT/.harness/bin/docker" ;;
esac
exit 0
"#;

const SYSTEMCTL: &str = r#"#!/bin/sh
# Stub systemctl: records the call; starts a unit by running its ExecStart in the background.
h="$LEVELRAIL_HARNESS_ROOT/.harness"
echo "systemctl $*" >> "$h/record"
verb="${1:-}"
[ $# -gt 0 ] && shift
[ "${1:-}" = "--now" ] && { now=1; shift; }
unit="${1:-}"
unit="${unit%.service}"
start_unit() {
  if [ "$unit" = docker ]; then
    [ -x "$h/bin/docker" ] || { echo "Failed to start docker.service: Unit docker.service not found." >&2; exit 5; }
    return 0
  fi
  file="$LEVELRAIL_HARNESS_ROOT/etc/systemd/system/$unit.service"
  [ -f "$file" ] || { echo "Unit $unit.service not found." >&2; exit 5; }
  exec_start=$(sed -n 's/^ExecStart=//p' "$file" | head -n 1)
  [ -n "$exec_start" ] || { echo "$unit.service has no ExecStart" >&2; exit 1; }
  state=$(sed -n 's/^StateDirectory=//p' "$file" | head -n 1)
  if [ -n "$state" ]; then
    mkdir -p "$LEVELRAIL_HARNESS_ROOT/var/lib/$state" && chmod 0700 "$LEVELRAIL_HARNESS_ROOT/var/lib/$state"
  fi
  # An emulated CPU (BootOptions::machine): the unit's binary runs under qemu-user.
  emulator=$(cat "$h/emulator" 2>/dev/null || true)
  nohup /bin/sh -c "exec $emulator $exec_start" </dev/null >"$h/$unit.log" 2>&1 &
  echo $! > "$h/$unit.pid"
}
case "$verb" in
  enable) [ -n "${now:-}" ] && start_unit ;;
  start|restart) start_unit ;;
  is-active) [ "$unit" = docker ] && [ -x "$h/bin/docker" ] && exit 0
    [ -f "$h/$unit.pid" ] && kill -0 "$(cat "$h/$unit.pid")" 2>/dev/null && exit 0
    exit 3 ;;
esac
exit 0
"#;

/// `uname` of a node whose CPU is emulated: `-m` prints its machine, the rest is real.
fn uname_script(machine: &str) -> String {
    format!(
        "#!/bin/sh\n# Stub uname: this node's CPU is {machine} (emulated by qemu-user).\n\
         [ \"$*\" = -m ] && {{ echo {machine}; exit 0; }}\nexec /usr/bin/uname \"$@\"\n"
    )
}

/// The qemu-user command line that runs a `machine` binary, with the cross libraries of
/// Debian's toolchain as its root (`-L`).
fn emulator(machine: &str) -> Result<String, String> {
    let qemu = format!("/usr/bin/qemu-{machine}");
    let sysroot = format!("/usr/{machine}-linux-gnu");
    if !Path::new(&qemu).is_file() || !Path::new(&sysroot).is_dir() {
        return Err(format!(
            "an emulated {machine} node needs {qemu} and {sysroot} (apt-get install qemu-user \
             gcc-{machine}-linux-gnu; scripts/test does)"
        ));
    }
    Ok(format!("{qemu} -L {sysroot}"))
}

/// Lays out `<root>/.harness`: the tool links, the stubs and an empty record. With
/// `machine`, the node's CPU is that one: `uname -m` says so and units run under qemu-user.
pub(super) fn install(
    root: &Path,
    docker_installed: bool,
    machine: Option<&str>,
) -> Result<(), String> {
    let harness = root.join(".harness");
    let bin = harness.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    for tool in TOOLS {
        let Some(real) = SEARCH
            .iter()
            .map(|dir| PathBuf::from(dir).join(tool))
            .find(|p| p.is_file())
        else {
            return Err(format!(
                "the boot harness needs {tool}, which this machine lacks"
            ));
        };
        std::os::unix::fs::symlink(&real, bin.join(tool))
            .map_err(|e| format!("linking {tool}: {e}"))?;
    }
    write_script(&harness.join("docker.stub"), DOCKER)?;
    if docker_installed {
        write_script(&bin.join("docker"), DOCKER)?;
    }
    write_script(&bin.join("apt-get"), APT_GET)?;
    write_script(&bin.join("systemctl"), SYSTEMCTL)?;
    if let Some(machine) = machine {
        let uname = bin.join("uname");
        std::fs::remove_file(&uname).map_err(|e| format!("{}: {e}", uname.display()))?;
        write_script(&uname, &uname_script(machine))?;
        let file = harness.join("emulator");
        std::fs::write(&file, emulator(machine)?)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    std::fs::write(harness.join("record"), "").map_err(|e| e.to_string())
}

fn write_script(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The stub calls recorded so far.
pub(super) fn calls(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join(".harness/record"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The pid of a unit the `systemctl` stub started.
pub(super) fn unit_pid(root: &Path, unit: &str) -> Option<u32> {
    std::fs::read_to_string(root.join(format!(".harness/{unit}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}
