//! A real boot on every cloud: each demo cloud's server boots its rendered user-data in a
//! Debian system container with real systemd and real cloud-init (`scripts/boot-node`,
//! rootfs from `scripts/node-rootfs`), sharing this machine's network. cloud-init writes
//! the files, runs the runcmd, curl downloads the agent from the agent listener, sha256sum
//! checks it, systemd starts it under the hardened unit, and it enrolls: `ready`. Its
//! heartbeats then carry the version it read from the container's Docker socket.
//!
//! Needs root and systemd-nspawn: `scripts/test` builds the rootfs and sets
//! `LEVELRAIL_REAL_BOOT=1` (CI always does). Without it the test says so and passes.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_sim::fakes::{BootEvent, BootHook};

use crate::harness::{TestApp, test_config};

fn boot_node_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/boot-node")
}

/// Boots each server in its own container; stops them all when dropped.
struct Containers {
    dir: PathBuf,
    nodes: Mutex<Vec<PathBuf>>,
    errors: Mutex<Vec<String>>,
}

impl Containers {
    fn hook(self: &Arc<Self>) -> BootHook {
        let containers = Arc::clone(self);
        Arc::new(move |event: BootEvent| {
            let containers = Arc::clone(&containers);
            std::thread::spawn(move || containers.boot(&event));
        })
    }

    fn boot(&self, event: &BootEvent) {
        let node = self.dir.join(&event.name);
        let user_data = self.dir.join(format!("{}.user-data", event.name));
        std::fs::write(&user_data, &event.user_data).unwrap();
        // For the record: how close each cloud's document is to its limit.
        eprintln!(
            "real boot: {} user-data is {} bytes",
            event.name,
            event.user_data.len()
        );
        let out = Command::new("bash")
            .arg(boot_node_script())
            .arg(&user_data)
            .arg(&node)
            .arg(&event.name)
            .output()
            .expect("boot-node runs");
        if out.status.success() {
            self.nodes.lock().unwrap().push(node);
        } else {
            self.errors.lock().unwrap().push(format!(
                "{}: boot-node failed: {}",
                event.name,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }

    /// What a node printed, for a failure message.
    fn diagnostics(node: &Path) -> String {
        let output =
            std::fs::read_to_string(node.join("var/log/cloud-init-output.log")).unwrap_or_default();
        let journal = Command::new("journalctl")
            .arg("-D")
            .arg(node.join("var/log/journal"))
            .args(["-u", "levelrail-agent", "--no-pager", "-o", "cat"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        format!("cloud-init output:\n{output}\nlevelrail-agent journal:\n{journal}")
    }
}

impl Drop for Containers {
    fn drop(&mut self) {
        for node in self.nodes.lock().unwrap().iter() {
            let _ = Command::new("bash")
                .arg(boot_node_script())
                .arg("--stop")
                .arg(node)
                .status();
        }
    }
}

async fn provision_and_wait(
    app: &TestApp,
    provider: Provider,
    region: &str,
    size: &str,
    name: &str,
) -> ppb::Provision {
    let id = app.provision(provider, region, size, name).await;
    let mut client = app.provisioner_client().await;
    crate::harness::wait_finished(&mut client, &id, name, Duration::from_secs(240)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cloud_boots_its_user_data_under_real_systemd_and_cloud_init_and_reaches_ready() {
    if std::env::var_os("LEVELRAIL_REAL_BOOT").as_deref() != Some(std::ffi::OsStr::new("1")) {
        eprintln!("skipping: set LEVELRAIL_REAL_BOOT=1 (root, systemd-nspawn; scripts/test does)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let containers = Arc::new(Containers {
        dir: tmp.path().join("nodes"),
        nodes: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
    });
    std::fs::create_dir_all(&containers.dir).unwrap();
    let mut cfg = test_config(&tmp.path().join("data"));
    cfg.demo = true;
    let app = TestApp::start_with_boot(cfg, Some(containers.hook()))
        .await
        .expect("control plane starts");
    let clouds = [
        (Provider::Hetzner, "fsn1", "cx22", "real-hetzner"),
        (
            Provider::Digitalocean,
            "nyc3",
            "s-1vcpu-1gb",
            "real-digitalocean",
        ),
        (Provider::Aws, "us-east-1", "t3.micro", "real-aws"),
        (Provider::Azure, "westeurope", "Standard_B2s", "real-azure"),
        (Provider::Gcp, "us-central1-a", "e2-small", "real-gcp"),
    ];

    let results = futures::future::join_all(clouds.iter().map(|(provider, region, size, name)| {
        provision_and_wait(&app, *provider, region, size, name)
    }))
    .await;

    let errors = containers.errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "{errors:?}");
    for ((_, _, _, name), p) in clouds.iter().zip(&results) {
        let status = ppb::ProvisionStatus::try_from(p.status).unwrap();
        assert_eq!(
            status,
            ppb::ProvisionStatus::Ready,
            "{name}: {} {}\n{}",
            p.failure_reason,
            p.provider_error_code,
            Containers::diagnostics(&containers.dir.join(name))
        );
        // cloud-init ran the document's own scripts: each reported its step.
        let steps = app.nodes.install_progress(&p.id).await.unwrap();
        for step in ["docker_ready", "agent_verified"] {
            assert!(
                steps
                    .iter()
                    .any(|s| s.step.as_str() == step && s.error.is_none()),
                "{name}: no {step} report: {steps:?}"
            );
        }
    }
    let nodes = app.nodes.list_nodes().await.unwrap();
    assert_eq!(nodes.len(), clouds.len(), "{nodes:?}");

    // Each agent asked the container's Docker socket (the rootfs's socket-activated Engine
    // API stand-in) for its version, and its heartbeat carried it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let nodes = app.nodes.list_nodes().await.unwrap();
        if nodes
            .iter()
            .all(|n| n.docker_version.as_deref() == Some("0.0.0-levelrail-stub"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every node reported the container's Docker engine: {:?}",
            nodes
                .iter()
                .map(|n| (n.name.as_str(), n.docker_version.as_deref()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
