//! The boot harness end to end: a Hetzner fake whose servers boot by executing their
//! user-data (real curl, real sha256sum, real `report-progress`, the downloaded agent),
//! against an in-process control plane. What a tampered pin, a missing Docker, an
//! advertised IP or DNS name, and a spent credential do.
use std::net::TcpListener as StdListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use levelrail::config::ServeConfig;
use levelrail_credentials::model::{CredentialInput, ProviderId};
use levelrail_proto::credentials::v1::Provider;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_sim::boot::{BootHarness, BootOptions, BootRecord};
use levelrail_sim::fakes::hetzner::{FakeHetzner, FakeHetznerConfig, FakeHetznerHandle};
use secrecy::SecretString;

use crate::harness::{Bearer, TestApp, set_endpoint, test_config};

pub(crate) const TOKEN: &str = "boot0000000000000000000000000000000000000000000000000000000hcloud";

pub(crate) struct Cloud {
    pub(crate) app: TestApp,
    harness: Arc<BootHarness>,
    _hetzner: FakeHetznerHandle,
    _dir: tempfile::TempDir,
}

/// A control plane, and a Hetzner fake booting through a harness with `options`;
/// `configure` adjusts the control plane's settings.
pub(crate) async fn cloud(options: BootOptions, configure: impl FnOnce(&mut ServeConfig)) -> Cloud {
    let dir = tempfile::tempdir().unwrap();
    let harness = BootHarness::new(dir.path().join("nodes"), options);
    let hetzner = FakeHetzner::start(FakeHetznerConfig {
        token: TOKEN.into(),
        boot_hook: Some(harness.hook()),
        state_step: Duration::from_millis(300),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut cfg = test_config(&dir.path().join("data"));
    set_endpoint(&mut cfg, ProviderId::Hetzner, "api", hetzner.base_url());
    configure(&mut cfg);
    let app = TestApp::start(cfg).await.expect("control plane starts");
    app.credentials
        .set_credential(CredentialInput::Token {
            provider: ProviderId::Hetzner,
            token: SecretString::from(TOKEN),
        })
        .await
        .unwrap();
    Cloud {
        app,
        harness,
        _hetzner: hetzner,
        _dir: dir,
    }
}

impl Cloud {
    async fn client(
        &self,
    ) -> ProvisionerServiceClient<
        tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
    > {
        ProvisionerServiceClient::with_interceptor(
            self.app.channel().await,
            Bearer(self.app.token.clone()),
        )
    }

    /// The Hetzner sizes of fsn1, as the catalog lists them.
    async fn sizes(&self) -> Vec<ppb::Size> {
        self.client()
            .await
            .list_sizes(ppb::ListSizesRequest {
                provider: Provider::Hetzner as i32,
                region: "fsn1".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .sizes
    }

    /// Provisions `name` (a cx22) and waits for a terminal state.
    async fn provision(&self, name: &str) -> ppb::Provision {
        self.provision_size(name, "cx22").await
    }

    /// Provisions `name` of `size` and waits for a terminal state.
    async fn provision_size(&self, name: &str, size: &str) -> ppb::Provision {
        let mut client = self.client().await;
        let created = client
            .provision(request(name, size))
            .await
            .expect("provision accepted")
            .into_inner()
            .provision
            .unwrap();
        crate::harness::wait_finished(&mut client, &created.id, name, Duration::from_secs(60)).await
    }

    /// The Docker version node `name` reported, once a heartbeat carried one.
    async fn docker_version(&self, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let nodes = self.app.nodes.list_nodes().await.unwrap();
            let node = nodes.iter().find(|n| n.name.as_str() == name);
            if let Some(version) = node.and_then(|n| n.docker_version.clone()) {
                return version;
            }
            assert!(
                Instant::now() < deadline,
                "{name} reported no Docker: {node:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The boot of `name`, once its runcmd finished.
    async fn record(&self, name: &str) -> BootRecord {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(r) = self.harness.records().into_iter().find(|r| r.name == name) {
                return r;
            }
            assert!(
                self.harness.failures().is_empty(),
                "{:?}",
                self.harness.failures()
            );
            assert!(Instant::now() < deadline, "{name} never booted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A Hetzner provision of `name` in fsn1.
fn request(name: &str, size: &str) -> ppb::ProvisionRequest {
    ppb::ProvisionRequest {
        provider: Provider::Hetzner as i32,
        region: "fsn1".into(),
        size: size.into(),
        name: name.into(),
        ..Default::default()
    }
}

fn status(p: &ppb::Provision) -> ppb::ProvisionStatus {
    ppb::ProvisionStatus::try_from(p.status).unwrap()
}

#[tokio::test]
async fn a_node_downloads_verifies_and_runs_the_served_agent_which_enrolls_and_deletes_its_secrets()
{
    let cloud = cloud(BootOptions::default(), |_| {}).await;

    let p = cloud.provision("boot-ok").await;
    let record = cloud.record("boot-ok").await;

    assert_eq!(
        status(&p),
        ppb::ProvisionStatus::Ready,
        "{p:?}\n{}",
        record.runcmd_output
    );
    let installed = record.path("/usr/local/bin/levelrail-agent");
    let served = std::fs::read(crate::harness::bin("levelrail-agent")).unwrap();
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        served,
        "the node runs the served bytes"
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(record.agent_pid.is_some(), "{}", record.runcmd_output);
    assert!(
        record
            .path("/var/lib/levelrail-agent/identity.json")
            .exists()
    );
    for secret in [
        "/var/lib/levelrail-agent/join-token",
        "/var/lib/levelrail-agent/progress.header",
    ] {
        assert!(
            !record.path(secret).exists(),
            "{secret} is left on the node"
        );
    }
    assert!(
        record
            .stub_calls
            .iter()
            .any(|c| c == "systemctl enable --now levelrail-agent"),
        "{:?}",
        record.stub_calls
    );
    assert!(
        !record.stub_calls.iter().any(|c| c.starts_with("apt-get")),
        "Docker was there: nothing is installed: {:?}",
        record.stub_calls
    );
    // The agent asked the engine on the node's Docker socket and its heartbeat said so.
    assert_eq!(
        cloud.docker_version("boot-ok").await,
        levelrail_sim::boot::ENGINE_VERSION,
        "{}",
        record.agent_log()
    );
}

#[tokio::test]
async fn a_binary_that_differs_from_its_pinned_hash_never_runs_and_the_provision_fails_naming_the_checksum()
 {
    let repin = Arc::new(|user_data: &str| {
        let at = user_data.find("sum=").expect("a pinned sum") + 4;
        format!(
            "{}{}{}",
            &user_data[..at],
            "0".repeat(64),
            &user_data[at + 64..]
        )
    });
    let options = BootOptions {
        rewrite: Some(repin),
        ..Default::default()
    };
    let cloud = cloud(options, |_| {}).await;

    let p = cloud.provision("boot-tampered").await;
    let record = cloud.record("boot-tampered").await;

    assert_eq!(status(&p), ppb::ProvisionStatus::Failed, "{p:?}");
    assert!(p.failure_reason.contains("SHA-256"), "{}", p.failure_reason);
    assert!(
        p.failure_reason.contains("agent_verified"),
        "{}",
        p.failure_reason
    );
    assert_eq!(
        ppb::ProvisionStatus::try_from(p.failed_phase).unwrap(),
        ppb::ProvisionStatus::Installing
    );
    assert!(
        record.agent_pid.is_none(),
        "the agent was started: {:?}",
        record.stub_calls
    );
    assert!(!record.path("/usr/local/bin/levelrail-agent").exists());
    assert!(cloud.app.nodes.list_nodes().await.unwrap().is_empty());
}

#[tokio::test]
async fn docker_is_installed_only_when_missing() {
    let options = BootOptions {
        docker_missing: true,
        ..Default::default()
    };
    let cloud = cloud(options, |_| {}).await;

    let p = cloud.provision("boot-nodocker").await;
    let record = cloud.record("boot-nodocker").await;

    assert_eq!(
        status(&p),
        ppb::ProvisionStatus::Ready,
        "{p:?}\n{}",
        record.runcmd_output
    );
    let calls = &record.stub_calls;
    let install = calls
        .iter()
        .position(|c| c.starts_with("apt-get install") && c.contains("docker.io"))
        .unwrap_or_else(|| panic!("docker.io was not installed: {calls:?}"));
    let enable = calls
        .iter()
        .position(|c| c == "systemctl enable --now docker")
        .expect("docker enabled");
    assert!(install < enable, "{calls:?}");
}

#[tokio::test]
async fn spent_and_foreign_progress_credentials_and_the_join_token_are_refused() {
    let documents = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = documents.clone();
    let keep = Arc::new(move |user_data: &str| {
        seen.lock().unwrap().push(user_data.to_owned());
        user_data.to_owned()
    });
    let cloud = cloud(
        BootOptions {
            rewrite: Some(keep),
            ..Default::default()
        },
        |_| {},
    )
    .await;
    let a = cloud.provision("boot-a").await;
    assert_eq!(status(&a), ppb::ProvisionStatus::Ready);
    let document = documents.lock().unwrap()[0].clone();
    let file = |path| levelrail_provisioner::cloudinit::written_file(&document, path).unwrap();
    let join_token = file(levelrail_provisioner::cloudinit::JOIN_TOKEN_PATH);
    let header = file(levelrail_provisioner::cloudinit::PROGRESS_HEADER_PATH);
    let credential = header
        .trim()
        .strip_prefix("Authorization: Bearer ")
        .unwrap()
        .to_owned();
    let secret = credential.rsplit('.').next().unwrap();
    let forged = format!("LRP1.npv_{}.{secret}", "0".repeat(32));
    let ca = reqwest::Certificate::from_pem(cloud.app.nodes.ca().cert_pem().as_bytes()).unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .build()
        .unwrap();
    let url = format!(
        "https://127.0.0.1:{}/v1/provision-progress",
        cloud.app.agent_addr.port()
    );

    for (what, bearer) in [
        ("the redeemed join token", join_token.trim().to_owned()),
        ("the credential after ready", credential.clone()),
        ("A's secret under another provision", forged),
    ] {
        let response = client
            .post(&url)
            .bearer_auth(&bearer)
            .json(&serde_json::json!({"step": "docker_ready"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 401, "{what}");
    }
}

/// Runs a booted node's own `report-progress STEP` (its URL pointed at a plain HTTP server
/// answering every request with `status_line`), and returns how many requests it made.
fn report_progress_requests(record: &BootRecord, status_line: &'static str) -> usize {
    use std::io::{Read as _, Write as _};
    let server = StdListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    server.set_nonblocking(true).unwrap();
    let count = Arc::new(Mutex::new(0usize));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let serve = {
        let (count, done) = (count.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                match server.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let mut buf = [0u8; 4096];
                        let _ = stream.read(&mut buf);
                        *count.lock().unwrap() += 1;
                        let _ = stream.write_all(
                            format!("{status_line}\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                                .as_bytes(),
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    let script = std::fs::read_to_string(
        record.path(levelrail_provisioner::cloudinit::REPORT_PROGRESS_PATH),
    )
    .unwrap();
    let script: String = script
        .lines()
        .map(|line| {
            if line.starts_with("url=") {
                format!("url='http://127.0.0.1:{port}/v1/provision-progress'\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    let copy = record.path(".harness/report-progress-under-test");
    std::fs::write(&copy, script).unwrap();
    // The agent deleted the header once enrolled; a node that reports late still has one.
    std::fs::write(
        record.path(levelrail_provisioner::cloudinit::PROGRESS_HEADER_PATH),
        "Authorization: Bearer LRP1.spent\n",
    )
    .unwrap();
    let status = std::process::Command::new("/bin/sh")
        .arg(&copy)
        .arg("agent_started")
        .env_clear()
        .env("PATH", record.path(".harness/bin"))
        .env("LEVELRAIL_HARNESS_ROOT", &record.root)
        .status()
        .unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    serve.join().unwrap();
    assert!(status.success(), "report-progress never fails the boot");
    *count.lock().unwrap()
}

#[tokio::test]
async fn a_refused_progress_report_is_final_and_an_unavailable_one_is_retried() {
    let cloud = cloud(BootOptions::default(), |_| {}).await;
    let p = cloud.provision("boot-late").await;
    assert_eq!(status(&p), ppb::ProvisionStatus::Ready, "{p:?}");
    let record = cloud.record("boot-late").await;
    // A report that lands after enrollment gets 401: one request, not a minute of retries.
    assert_eq!(
        report_progress_requests(&record, "HTTP/1.1 401 Unauthorized"),
        1
    );
    // A control plane that is briefly unavailable is tried again (5 retries).
    assert_eq!(
        report_progress_requests(&record, "HTTP/1.1 503 Service Unavailable"),
        6
    );
}

#[tokio::test]
async fn progress_arrives_over_tls_at_an_advertised_ip_and_at_a_dns_name() {
    // An advertised loopback IP other than 127.0.0.1.
    let port = crate::harness::free_port_on("127.0.0.2");
    let cloud_ip = cloud(BootOptions::default(), |cfg| {
        cfg.front.nodes.agent_listen = format!("127.0.0.2:{port}").parse().unwrap();
        cfg.front.nodes.agent_advertise = Some(format!("127.0.0.2:{port}"));
    })
    .await;
    let p = cloud_ip.provision("boot-ip").await;
    assert_eq!(status(&p), ppb::ProvisionStatus::Ready, "{p:?}");
    let steps = cloud_ip.app.nodes.install_progress(&p.id).await.unwrap();
    assert!(
        steps.iter().any(|s| s.step.as_str() == "agent_verified"),
        "{steps:?}"
    );

    // A DNS name that resolves for the node only.
    if !std::path::Path::new("/usr/bin/unshare").exists() {
        eprintln!("skipping the DNS-name half: no unshare");
        return;
    }
    let port = crate::harness::free_port();
    let options = BootOptions {
        hosts: vec![("127.0.0.1".into(), "agent.levelrail.test".into())],
        ..Default::default()
    };
    let cloud_dns = cloud(options, |cfg| {
        cfg.front.nodes.agent_listen = format!("127.0.0.1:{port}").parse().unwrap();
        cfg.front.nodes.agent_advertise = Some(format!("agent.levelrail.test:{port}"));
    })
    .await;
    let p = cloud_dns.provision("boot-dns").await;
    let record = cloud_dns.record("boot-dns").await;
    assert_eq!(
        status(&p),
        ppb::ProvisionStatus::Ready,
        "{p:?}\n{}\n{}",
        record.runcmd_output,
        record.agent_log()
    );
    let steps = cloud_dns.app.nodes.install_progress(&p.id).await.unwrap();
    assert!(
        steps.iter().any(|s| s.step.as_str() == "docker_ready"),
        "{steps:?}"
    );
}

#[tokio::test]
async fn provisioning_is_refused_naming_the_flag_while_the_agent_address_is_a_wildcard_or_loopback()
{
    let cloud = cloud(BootOptions::default(), |cfg| {
        cfg.front.nodes.allow_loopback_agent_advertise = false;
    })
    .await;
    let mut client = cloud.client().await;
    let refused = client
        .provision(request("boot-refused", "cx22"))
        .await
        .expect_err("loopback is unreachable from a cloud");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused.message().contains("--agent-advertise"),
        "{}",
        refused.message()
    );
}

/// Answers the first Enroll with UNAVAILABLE after the enrollment has committed: to the
/// agent the answer is lost.
async fn lose_first_enroll_answer(
    axum::extract::State(lost): axum::extract::State<Arc<std::sync::atomic::AtomicBool>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let enroll = request.uri().path().ends_with("/Enroll");
    let response = next.run(request).await;
    if enroll && !lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
        let _ = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        return axum::response::Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .header("grpc-status", "14")
            .header("grpc-message", "connection lost")
            .body(axum::body::Body::empty())
            .unwrap();
    }
    response
}

#[tokio::test]
async fn an_enrollment_whose_answer_is_lost_is_retried_and_gives_one_node() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(&tmp.path().join("data")).await;
    let (_, token) = app
        .nodes
        .create_join_token(
            None,
            None,
            None,
            levelrail_provisioner::model::Role::General,
        )
        .await
        .unwrap();
    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let router = levelrail::agent::router(app.nodes.clone()).layer(
        axum::middleware::from_fn_with_state(lost.clone(), lose_first_enroll_answer),
    );
    let tls = levelrail::agent::tls(app.nodes.ca(), &["127.0.0.1".into()]).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(levelrail::listener::serve(listener, router, Some(tls), rx));
    let token_file = tmp.path().join("join-token");
    std::fs::write(&token_file, secrecy::ExposeSecret::expose_secret(&token)).unwrap();
    let identity = tmp.path().join("state/identity.json");
    let env = tmp.path().join("agent.env");
    std::fs::write(
        &env,
        format!(
            "APP_CONTROL_PLANE_ADDR={addr}\nAPP_NODE_NAME=lost-1\nAPP_JOIN_TOKEN_FILE={}\n\
             APP_AGENT_IDENTITY_FILE={}\nAPP_ENROLL_RETRY_SECONDS=60\n",
            token_file.display(),
            identity.display()
        ),
    )
    .unwrap();

    let out = tokio::process::Command::new(crate::harness::bin("levelrail-agent"))
        .arg("--env-file")
        .arg(&env)
        .arg("--once")
        .env_clear()
        .output()
        .await
        .unwrap();

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        lost.load(std::sync::atomic::Ordering::SeqCst),
        "the first answer was dropped"
    );
    let nodes = app.nodes.list_nodes().await.unwrap();
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&identity).unwrap()).unwrap();
    assert_eq!(stored["node_id"], nodes[0].id.as_str());
    assert!(!token_file.exists(), "the spent token is deleted");
}

#[tokio::test]
async fn a_size_without_an_agent_binary_for_its_architecture_is_listed_unavailable_and_refused() {
    let cloud = cloud(BootOptions::default(), |_| {}).await;

    let sizes = cloud.sizes().await;
    let refused = cloud
        .client()
        .await
        .provision(request("boot-arm", "cax11"))
        .await
        .expect_err("no aarch64 agent is served");

    let arm = sizes
        .iter()
        .find(|s| s.id == "cax11")
        .expect("the Arm size is listed");
    assert_eq!(arm.architecture, "aarch64");
    assert!(arm.unavailable_reason.contains("aarch64"), "{arm:?}");
    let x86 = sizes.iter().find(|s| s.id == "cx22").unwrap();
    assert_eq!(
        (x86.architecture.as_str(), x86.unavailable_reason.as_str()),
        ("x86_64", "")
    );
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("size"), "{}", refused.message());
    assert!(cloud.harness.records().is_empty(), "nothing was created");
}

#[tokio::test]
async fn an_arm_size_boots_the_cross_built_aarch64_agent_which_enrolls() {
    let Some(aarch64) = crate::harness::optional_bin("levelrail-agent-aarch64") else {
        assert!(
            std::env::var_os("LEVELRAIL_REQUIRE_AARCH64").is_none(),
            "LEVELRAIL_REQUIRE_AARCH64 is set but levelrail-agent-aarch64 is not built"
        );
        eprintln!("skipping: no levelrail-agent-aarch64 (scripts/test cross-builds it)");
        return;
    };
    let options = BootOptions {
        machine: Some("aarch64".into()),
        ..Default::default()
    };
    let served = aarch64.clone();
    let cloud = cloud(options, move |cfg| {
        cfg.front.nodes.agent_binaries = vec![crate::harness::bin("levelrail-agent"), served];
    })
    .await;
    let sizes = cloud.sizes().await;
    let arm = sizes.iter().find(|s| s.id == "cax11").unwrap();
    assert_eq!(
        (arm.architecture.as_str(), arm.unavailable_reason.as_str()),
        ("aarch64", "")
    );

    let p = cloud.provision_size("boot-arm", "cax11").await;
    let record = cloud.record("boot-arm").await;

    assert_eq!(
        status(&p),
        ppb::ProvisionStatus::Ready,
        "{p:?}\n{}\n{}",
        record.runcmd_output,
        record.agent_log()
    );
    let installed = std::fs::read(record.path("/usr/local/bin/levelrail-agent")).unwrap();
    assert!(
        installed == std::fs::read(&aarch64).unwrap(),
        "the node downloaded the aarch64 binary"
    );
    assert_eq!(
        u16::from_le_bytes([installed[18], installed[19]]),
        183,
        "ELF machine EM_AARCH64"
    );
    // The emulated agent reads the node's Docker socket like the native one.
    assert_eq!(
        cloud.docker_version("boot-arm").await,
        levelrail_sim::boot::ENGINE_VERSION
    );
}
