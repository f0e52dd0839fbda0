//! Test helpers: an in-process fake `EnrollmentService` served over TLS, a recording
//! man-in-the-middle TLS server, and a runner for the real `levelrail-agent` binary.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use levelrail_proto::nodes::v1::enrollment_service_server::{
    EnrollmentService, EnrollmentServiceServer,
};
use levelrail_proto::nodes::v1::{
    EnrollRequest, EnrollResponse, HeartbeatRequest, HeartbeatResponse, ReportProgressRequest,
    ReportProgressResponse,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tonic::{Request, Response, Status};

pub(crate) use crate::pki::{TestCa, server_config};

/// The secret part of every test token: a canary that must never reach stderr.
pub(crate) const SECRET: &str = "Q2FuYXJ5U2VjcmV0VmFsdWVGb3JUZXN0cw";
/// The token id of every test token.
pub(crate) const TOKEN_ID: &str = "njt_test01";
/// The node id the fake control plane assigns.
pub(crate) const NODE_ID: &str = "node_test01";

/// A join token for the CA with fingerprint `fp`.
pub(crate) fn token(fp: &str) -> String {
    format!("LR1.{fp}.{TOKEN_ID}.{SECRET}")
}

/// What the fake control plane saw, and how it answers.
#[derive(Default)]
pub(crate) struct FakeState {
    /// `Some`: answer `Enroll` with this status.
    pub(crate) enroll_reply: Mutex<Option<Status>>,
    /// `Some`: answer `Heartbeat` with this status.
    pub(crate) heartbeat_reply: Mutex<Option<Status>>,
    pub(crate) enroll_requests: Mutex<Vec<EnrollRequest>>,
    pub(crate) issued_certs: Mutex<Vec<String>>,
    pub(crate) heartbeats: AtomicUsize,
    /// The client certificate (DER) presented with each heartbeat.
    pub(crate) heartbeat_peer_certs: Mutex<Vec<Vec<u8>>>,
}

impl FakeState {
    pub(crate) fn enroll_calls(&self) -> usize {
        self.enroll_requests.lock().unwrap().len()
    }

    pub(crate) fn heartbeat_calls(&self) -> usize {
        self.heartbeats.load(Ordering::SeqCst)
    }
}

struct FakeService {
    ca: Arc<TestCa>,
    state: Arc<FakeState>,
}

#[tonic::async_trait]
impl EnrollmentService for FakeService {
    async fn enroll(
        &self,
        request: Request<EnrollRequest>,
    ) -> Result<Response<EnrollResponse>, Status> {
        let request = request.into_inner();
        let csr_pem = request.csr_pem.clone();
        self.state.enroll_requests.lock().unwrap().push(request);
        if let Some(status) = self.state.enroll_reply.lock().unwrap().clone() {
            return Err(status);
        }
        let certificate_pem = self.ca.sign_csr(&csr_pem, NODE_ID);
        self.state
            .issued_certs
            .lock()
            .unwrap()
            .push(certificate_pem.clone());
        Ok(Response::new(EnrollResponse {
            node_id: NODE_ID.into(),
            certificate_pem,
            ca_pem: self.ca.pem(),
            heartbeat_interval_seconds: 1,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let Some(cert) = request
            .peer_certs()
            .and_then(|certs| certs.first().cloned())
        else {
            return Err(Status::unauthenticated("client certificate required"));
        };
        self.state
            .heartbeat_peer_certs
            .lock()
            .unwrap()
            .push(cert.to_vec());
        self.state.heartbeats.fetch_add(1, Ordering::SeqCst);
        if let Some(status) = self.state.heartbeat_reply.lock().unwrap().clone() {
            return Err(status);
        }
        Ok(Response::new(HeartbeatResponse { server_time: None }))
    }

    async fn report_progress(
        &self,
        _: Request<ReportProgressRequest>,
    ) -> Result<Response<ReportProgressResponse>, Status> {
        Err(Status::unimplemented("not in this fake"))
    }
}

/// An in-process control plane: `EnrollmentService` over TLS with its own CA.
pub(crate) struct FakeControlPlane {
    pub(crate) addr: SocketAddr,
    pub(crate) ca: Arc<TestCa>,
    pub(crate) state: Arc<FakeState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeControlPlane {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeControlPlane {
    pub(crate) async fn start() -> Self {
        let ca = Arc::new(TestCa::new("Levelrail control-plane CA (test)"));
        let (leaf, key) = ca.server_leaf();
        let tls = TlsAcceptor::from(server_config(vec![leaf, ca.der()], key, Some(&ca)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (tls, tx) = (tls.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(stream) = tls.accept(tcp).await {
                        let _ = tx.send(Ok::<_, std::io::Error>(stream)).await;
                    }
                });
            }
        });
        let state = Arc::new(FakeState::default());
        let service = FakeService {
            ca: ca.clone(),
            state: state.clone(),
        };
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(EnrollmentServiceServer::new(service))
                .serve_with_incoming(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .unwrap();
        });
        Self {
            addr,
            ca,
            state,
            task,
        }
    }
}

/// A TLS server with its own CA that records every decrypted byte it receives.
pub(crate) struct Mitm {
    pub(crate) addr: SocketAddr,
    /// TCP connections accepted.
    pub(crate) connections: Arc<AtomicUsize>,
    /// Application bytes received after a completed handshake.
    pub(crate) bytes: Arc<AtomicUsize>,
}

impl Mitm {
    /// Presents `chain` (leaf first) with `key`.
    pub(crate) async fn start(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Self {
        let tls = TlsAcceptor::from(server_config(chain, key, None));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let bytes = Arc::new(AtomicUsize::new(0));
        let (conns, counted) = (connections.clone(), bytes.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                conns.fetch_add(1, Ordering::SeqCst);
                let (tls, counted) = (tls.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(mut stream) = tls.accept(tcp).await else {
                        return;
                    };
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = stream.read(&mut buf).await {
                        counted.fetch_add(n, Ordering::SeqCst);
                    }
                });
            }
        });
        Self {
            addr,
            connections,
            bytes,
        }
    }

    /// A MITM whose whole chain comes from `ca`.
    pub(crate) async fn with_ca(ca: &TestCa) -> Self {
        let (leaf, key) = ca.server_leaf();
        Self::start(vec![leaf, ca.der()], key).await
    }
}

/// A scratch directory with the files an agent run needs.
pub(crate) struct Node {
    pub(crate) dir: tempfile::TempDir,
}

impl Node {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn identity_path(&self) -> PathBuf {
        self.dir.path().join("data/identity.json")
    }

    pub(crate) fn token_path(&self) -> PathBuf {
        self.dir.path().join("join-token")
    }

    /// Writes the env file the cloud-init would write (token passed by file) plus `extra`
    /// lines, and returns its path.
    pub(crate) fn env_file(&self, addr: SocketAddr, token: &str, extra: &[&str]) -> PathBuf {
        std::fs::write(self.token_path(), format!("{token}\n")).unwrap();
        let mut text = format!(
            "# written by cloud-init\nAPP_CONTROL_PLANE_ADDR={addr}\nAPP_JOIN_TOKEN_FILE=\"{}\"\n\
             APP_NODE_NAME=web-1\nAPP_AGENT_IDENTITY_FILE={}\nAPP_ENROLL_RETRY_SECONDS=5\n",
            self.token_path().display(),
            self.identity_path().display()
        );
        for line in extra {
            text.push_str(line);
            text.push('\n');
        }
        let path = self.dir.path().join("levelrail-agent.env");
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// How an agent run ended.
#[derive(Debug)]
pub(crate) struct AgentRun {
    pub(crate) code: Option<i32>,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

impl AgentRun {
    /// The last stderr line: the one-line exit message.
    pub(crate) fn last_line(&self) -> &str {
        self.stderr.lines().last().unwrap_or("")
    }

    /// Asserts the run never printed the token secret.
    pub(crate) fn assert_no_secret(&self) {
        assert!(
            !self.stderr.contains(SECRET),
            "the token secret reached stderr:\n{}",
            self.stderr
        );
    }
}

/// The real binary, with a clean environment plus `env`.
pub(crate) fn agent_command(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_levelrail-agent"));
    cmd.args(args)
        .env_clear()
        .env("LEVELRAIL_LOG", "debug")
        .kill_on_drop(true);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs the agent to completion (60 s at most).
pub(crate) async fn run_agent(args: &[&str], env: &[(&str, &str)]) -> AgentRun {
    let start = Instant::now();
    let child = agent_command(args, env).spawn().unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("agent did not finish in 60 s")
        .unwrap();
    AgentRun {
        code: output.status.code(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: start.elapsed(),
    }
}

/// `--env-file <path> --once`.
pub(crate) async fn run_once(env_file: &Path, env: &[(&str, &str)]) -> AgentRun {
    run_agent(&["--env-file", env_file.to_str().unwrap(), "--once"], env).await
}

/// A local address with nothing listening (connections are refused).
pub(crate) async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// Waits until `cond` holds (10 s at most).
pub(crate) async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
