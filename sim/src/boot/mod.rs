//! The boot harness: runs a server's rendered user-data the way cloud-init on the VM would,
//! on this machine. `write_files` are written under a root directory (node paths
//! re-rooted), the `runcmd` entries become one `/bin/sh` script run in order, and the real
//! tools run: curl downloads the agent from the control plane's agent listener, sha256sum
//! checks it, the `report-progress` script posts the steps. Only `docker`, `systemctl` and
//! `apt-get` are recording stubs (`stubs.rs`); the `systemctl` stub starts a unit by running
//! its (re-rooted) `ExecStart`, so the binary the document downloaded is what enrolls.
//! Each node's `/var/run/docker.sock` answers the Engine API's `GET /version` once Docker
//! is installed (`engine.rs`), so the agent's heartbeats report its version.
//!
//! Demo mode and the end-to-end tests boot every server through it. The real-boot tests
//! run the same document under real systemd and cloud-init (`scripts/boot-node`).
mod document;
mod engine;
mod stubs;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::process::Command;

use crate::fakes::{BootEvent, BootHook};

pub use document::{Document, reroot};
pub use engine::ENGINE_VERSION;

/// A change to the user-data before it boots (tests: a document pinned to other bytes).
pub type Rewrite = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// How the harness's machines look.
#[derive(Clone, Default)]
pub struct BootOptions {
    /// Docker is already installed (the stub `docker` is on PATH from the start); without
    /// it, only `apt-get install docker.io` puts it there.
    pub docker_missing: bool,
    /// Extra `/etc/hosts` lines (`ip name`) for the node's commands and its agent: a DNS
    /// name that resolves for the harness only (run in a private mount namespace).
    pub hosts: Vec<(String, String)>,
    /// Applied to the user-data before it boots.
    pub rewrite: Option<Rewrite>,
    /// The nodes' CPU when it is not this machine's (`aarch64`): `uname -m` reports it and
    /// the agent the node downloaded runs under qemu-user.
    pub machine: Option<String>,
}

impl std::fmt::Debug for BootOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootOptions")
            .field("docker_missing", &self.docker_missing)
            .field("hosts", &self.hosts)
            .field("rewrite", &self.rewrite.is_some())
            .field("machine", &self.machine)
            .finish()
    }
}

/// What one boot did.
#[derive(Debug, Clone)]
pub struct BootRecord {
    /// The server's name.
    pub name: String,
    /// The provider's server id.
    pub server_id: String,
    /// The node's root directory.
    pub root: PathBuf,
    /// Exit status of the runcmd script (`None`: killed by a signal).
    pub runcmd_status: Option<i32>,
    /// What the runcmd script printed (stdout and stderr).
    pub runcmd_output: String,
    /// Every stub call, in order (`docker pull …`, `systemctl enable --now docker`, …).
    pub stub_calls: Vec<String>,
    /// The process id of the agent the `systemctl` stub started, if it did.
    pub agent_pid: Option<u32>,
}

impl BootRecord {
    /// The node path `path` under this node's root.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// The agent's log (stdout and stderr of the unit's ExecStart).
    pub fn agent_log(&self) -> String {
        std::fs::read_to_string(self.root.join(".harness/levelrail-agent.log")).unwrap_or_default()
    }
}

/// Boots servers by executing their user-data.
#[derive(Debug)]
pub struct BootHarness {
    dir: PathBuf,
    options: BootOptions,
    records: Mutex<Vec<BootRecord>>,
    failures: Mutex<Vec<String>>,
    engines: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl BootHarness {
    /// A harness whose nodes live under `dir`.
    pub fn new(dir: impl Into<PathBuf>, options: BootOptions) -> Arc<Self> {
        Arc::new(Self {
            dir: dir.into(),
            options,
            records: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
            engines: Mutex::new(Vec::new()),
        })
    }

    /// A hook for the fake clouds: each running server boots on the current runtime.
    pub fn hook(self: &Arc<Self>) -> BootHook {
        let runtime = tokio::runtime::Handle::current();
        let harness = Arc::clone(self);
        Arc::new(move |event: BootEvent| {
            let harness = Arc::clone(&harness);
            runtime.spawn(async move {
                let name = event.name.clone();
                if let Err(e) = harness.boot(event).await {
                    tracing::warn!(server = %name, error = %e, "boot harness: the boot failed");
                    lock(&harness.failures).push(format!("{name}: {e}"));
                }
            });
        })
    }

    /// Boots one server: writes its files, runs its runcmd, and returns what happened.
    pub async fn boot(&self, event: BootEvent) -> Result<BootRecord, String> {
        let user_data = match &self.options.rewrite {
            Some(rewrite) => rewrite(&event.user_data),
            None => event.user_data.clone(),
        };
        let root = self.dir.join(format!("{}-{}", event.name, event.server_id));
        if root.exists() {
            return Err(format!("{} booted already", root.display()));
        }
        let document = Document::parse(&user_data)?;
        let reroot_prefixes = document.node_dirs();
        std::fs::create_dir_all(root.join("root")).map_err(io(&root))?;
        stubs::install(
            &root,
            !self.options.docker_missing,
            self.options.machine.as_deref(),
        )?;
        match engine::start(&root) {
            Ok(task) => lock(&self.engines).push(task),
            Err(e) => {
                tracing::warn!(server = %event.name, error = %e, "boot harness: no Docker engine")
            }
        }
        // Kept for inspection (it holds the node's secrets, so root-only like on a VM).
        let kept = root.join(".harness/user-data");
        std::fs::write(&kept, &user_data).map_err(io(&kept))?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600))
                .map_err(io(&kept))?;
        }
        document.write_files(&root, &reroot_prefixes)?;
        let script = root.join("var/lib/cloud/instance/scripts/runcmd");
        std::fs::create_dir_all(script.parent().unwrap_or(&root)).map_err(io(&script))?;
        std::fs::write(&script, document.runcmd_script(&root, &reroot_prefixes))
            .map_err(io(&script))?;
        let output = self.run(&root, &script).await?;
        let record = BootRecord {
            name: event.name,
            server_id: event.server_id,
            runcmd_status: output.status.code(),
            runcmd_output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
            stub_calls: stubs::calls(&root),
            agent_pid: stubs::unit_pid(&root, "levelrail-agent"),
            root,
        };
        lock(&self.records).push(record.clone());
        Ok(record)
    }

    /// Runs the runcmd script as cloud-init does (`/bin/sh`), with only the node's tools on
    /// PATH, in a private mount namespace when `/etc/hosts` has extra lines.
    async fn run(&self, root: &Path, script: &Path) -> Result<std::process::Output, String> {
        let mut command = if self.options.hosts.is_empty() {
            let mut c = Command::new("/bin/sh");
            c.arg(script);
            c
        } else {
            let hosts = root.join(".harness/hosts");
            let mut text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
            for (ip, name) in &self.options.hosts {
                text.push_str(&format!("{ip} {name}\n"));
            }
            std::fs::write(&hosts, text).map_err(io(&hosts))?;
            let mut c = Command::new("/usr/bin/unshare");
            c.args(["--mount", "--propagation", "private", "/bin/sh", "-c"])
                .arg("/bin/mount --bind \"$0\" /etc/hosts && exec /bin/sh \"$1\"")
                .arg(&hosts)
                .arg(script);
            c
        };
        command
            .env_clear()
            .env("PATH", root.join(".harness/bin"))
            .env("HOME", root.join("root"))
            .env("LANG", "C")
            .env("LEVELRAIL_HARNESS_ROOT", root)
            .current_dir(root.join("root"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| format!("running the runcmd script: {e}"))
    }

    /// Every finished boot, in order.
    pub fn records(&self) -> Vec<BootRecord> {
        lock(&self.records).clone()
    }

    /// Boots that could not run at all (a malformed document, an I/O error).
    pub fn failures(&self) -> Vec<String> {
        lock(&self.failures).clone()
    }

    /// How many agents the harness's `systemctl` started.
    pub fn agent_count(&self) -> usize {
        lock(&self.records)
            .iter()
            .filter(|r| r.agent_pid.is_some())
            .count()
    }
}

impl Drop for BootHarness {
    /// The agents outlive their boot script; they stop with the harness.
    fn drop(&mut self) {
        for engine in lock(&self.engines).iter() {
            engine.abort();
        }
        for record in lock(&self.records).iter() {
            if let Some(pid) = record.agent_pid {
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}
