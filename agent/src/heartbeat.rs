//! Heartbeats over mTLS with the node's client certificate, pinned to the stored CA.
//!
//! Every `heartbeat_interval_seconds` the agent calls `Heartbeat`. A failure is logged and
//! retried with backoff (forever in service mode; within `APP_ENROLL_RETRY_SECONDS` with
//! `--once`, then exit 8). `UNAUTHENTICATED`, `PERMISSION_DENIED` and `NOT_FOUND` mean the
//! node was deleted: exit 9. A server that does not chain to the pinned CA: exit 3.

use std::path::Path;
use std::time::Duration;

use levelrail_proto::nodes::v1::HeartbeatRequest;
use levelrail_proto::nodes::v1::enrollment_service_client::EnrollmentServiceClient;
use tonic::Code;
use tonic::transport::Channel;
use tracing::{debug, info, warn};

use crate::config::ControlPlaneAddr;
use crate::connect::{DialError, Dialer};
use crate::docker::DockerHost;
use crate::exit::AgentError;
use crate::identity::Identity;
use crate::retry::{Attempt, Backoff};

/// Where and how to heartbeat.
#[derive(Debug)]
pub(crate) struct Heartbeats<'a> {
    /// The node identity (client certificate, pin, interval).
    pub(crate) identity: &'a Identity,
    /// The control plane to call.
    pub(crate) addr: &'a ControlPlaneAddr,
    /// The identity file, named in the "node removed" message.
    pub(crate) identity_file: &'a Path,
    /// Stop after the first accepted heartbeat.
    pub(crate) once: bool,
    /// With `once`: how long to keep retrying.
    pub(crate) budget: Duration,
    /// The local Docker engine, whose version each heartbeat carries.
    pub(crate) docker: &'a DockerHost,
}

/// Runs heartbeats until a fatal error, or until the first success with `once`.
pub(crate) async fn run(h: Heartbeats<'_>) -> Result<(), AgentError> {
    let identity = h.identity;
    let pin = identity
        .pin()
        .ok_or_else(|| AgentError::Unexpected("node identity: bad pin".into()))?;
    let dialer = Dialer::new(
        h.addr,
        pin,
        identity.ca_der(),
        Some(identity.client_auth()?),
    )?;
    let addresses = dialer.local_addresses().await;
    let mut backoff = if h.once {
        Backoff::with_budget(h.budget)
    } else {
        Backoff::unlimited()
    };
    let mut client = None;
    let mut failing = false;
    let mut accepted: u64 = 0;
    let mut docker = DockerState::Unknown;
    loop {
        let docker_version = docker.probe(h.docker).await;
        match beat(
            &dialer,
            &mut client,
            &addresses,
            &docker_version,
            &backoff,
            &h,
        )
        .await
        {
            Ok(()) => {
                accepted += 1;
                if accepted == 1 || failing {
                    info!(node_id = %identity.node_id, control_plane = %h.addr, "heartbeat accepted");
                } else {
                    debug!(node_id = %identity.node_id, "heartbeat accepted");
                }
                if h.once {
                    return Ok(());
                }
                failing = false;
                backoff.reset();
                tokio::time::sleep(identity.heartbeat_interval()).await;
            }
            Err(Attempt::Fatal(e)) => return Err(e),
            Err(Attempt::Retry(why)) => {
                warn!(node_id = %identity.node_id, error = %why, "heartbeat failed; retrying");
                failing = true;
                client = None;
                if !backoff.wait().await {
                    return Err(AgentError::Unreachable {
                        addr: h.addr.to_string(),
                        seconds: h.budget.as_secs(),
                        last_error: why,
                    });
                }
            }
        }
    }
}

async fn beat(
    dialer: &Dialer,
    client: &mut Option<EnrollmentServiceClient<Channel>>,
    addresses: &[String],
    docker_version: &str,
    backoff: &Backoff,
    h: &Heartbeats<'_>,
) -> Result<(), Attempt> {
    let client = match client {
        Some(client) => client,
        None => match dialer
            .connect(backoff.remaining().unwrap_or(Duration::MAX))
            .await
        {
            Ok(channel) => client.insert(EnrollmentServiceClient::new(channel)),
            Err(DialError::PinRejected) => {
                return Err(Attempt::Fatal(AgentError::IdentityPinMismatch));
            }
            Err(DialError::Failed(why)) => return Err(Attempt::Retry(why)),
        },
    };
    let request = HeartbeatRequest {
        addresses: addresses.to_vec(),
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        docker_version: docker_version.to_owned(),
    };
    let status = match client.heartbeat(request).await {
        Ok(_) => return Ok(()),
        Err(status) => status,
    };
    if dialer.pin_rejected() {
        return Err(Attempt::Fatal(AgentError::IdentityPinMismatch));
    }
    match status.code() {
        Code::Unauthenticated | Code::PermissionDenied | Code::NotFound => {
            Err(Attempt::Fatal(AgentError::NodeRemoved {
                node_id: h.identity.node_id.clone(),
                reason: format!("{:?}", status.code()),
                identity_file: h.identity_file.to_owned(),
            }))
        }
        code => Err(Attempt::Retry(format!("{code:?}: {}", status.message()))),
    }
}

/// What the agent last learned of the Docker engine, so a change is logged once rather
/// than on every heartbeat.
#[derive(Debug, PartialEq, Eq)]
enum DockerState {
    Unknown,
    Up(String),
    Down(String),
}

impl DockerState {
    /// Asks the engine; returns the version to report (empty while it is unavailable).
    async fn probe(&mut self, host: &DockerHost) -> String {
        let next = match host.engine_version().await {
            Ok(version) => DockerState::Up(version),
            Err(why) => DockerState::Down(why),
        };
        if next != *self {
            match &next {
                DockerState::Up(version) => {
                    info!(%version, docker_host = %host, "Docker engine available")
                }
                DockerState::Down(why) => {
                    warn!(error = %why, "Docker engine unavailable; workloads cannot run on this node")
                }
                DockerState::Unknown => {}
            }
        }
        *self = next;
        match self {
            DockerState::Up(version) => version.clone(),
            _ => String::new(),
        }
    }
}
