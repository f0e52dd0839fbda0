//! The agent listener (`--agent-listen`): TLS with a server certificate from the
//! control-plane CA, client certificates optional at the TLS layer (Enroll has none yet;
//! Heartbeat requires the node's certificate, checked by the handler). Serves the
//! `EnrollmentService`, the agent binaries (`agent_binaries.rs`) and the cloud-init
//! progress endpoint `POST /v1/provision-progress` (`Authorization: Bearer <progress
//! credential>`, body `{"step":"docker_ready"}` or `{"step":"agent_verified","error":"…"}`),
//! which plain `curl` on a booting VM can call. A join token is refused there: its only use
//! is Enroll.
use std::sync::Arc;

use anyhow::Context as _;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use levelrail_provisioner::app::{Nodes, NodesError};
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::grpc::EnrollmentGrpc;
use levelrail_provisioner::model::ProgressReport;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::server::WebPkiClientVerifier;
use tracing::debug;

/// Largest Enroll message (a CSR and a few names).
const ENROLL_MAX_MESSAGE: usize = 64 * 1024;

/// The agent-facing router.
pub fn router(nodes: Arc<Nodes>) -> axum::Router {
    let enroll = EnrollmentGrpc::new(nodes.clone())
        .into_server()
        .max_decoding_message_size(ENROLL_MAX_MESSAGE);
    let grpc = tonic::service::Routes::new(enroll)
        .prepare()
        .into_axum_router();
    let rest = axum::Router::new()
        .route("/v1/provision-progress", post(report_progress))
        .with_state(nodes);
    grpc.merge(rest).layer(axum::middleware::from_fn_with_state(
        Arc::new(crate::per_ip::PerIpBudget::agent_listener()),
        crate::per_ip::limit,
    ))
}

/// How long a progress report's body may take to arrive (it is a few hundred bytes).
const PROGRESS_BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// A progress report. Before any of the body is read, the bearer credential must be one
/// this control plane derived (its MAC verifies under the sealing key: no store read), the
/// body must be `application/json` and declare no more than [`ProgressReport::MAX_BODY`]
/// bytes. The body is then read within [`PROGRESS_BODY_DEADLINE`], decoded by the model,
/// and the report recorded by `Nodes`, which also checks that the provision is in flight.
async fn report_progress(
    State(nodes): State<Arc<Nodes>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> (StatusCode, String) {
    let Some(token) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return (
            StatusCode::UNAUTHORIZED,
            "missing bearer progress credential\n".into(),
        );
    };
    let token = token.trim();
    if let Err(e) = nodes.check_progress_credential(token) {
        return refused(e);
    }
    let json = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "expected Content-Type: application/json\n".into(),
        );
    }
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body: is larger than {} bytes\n", ProgressReport::MAX_BODY),
        )
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > ProgressReport::MAX_BODY as u64) {
        return too_large();
    }
    let read = tokio::time::timeout(
        PROGRESS_BODY_DEADLINE,
        axum::body::to_bytes(body, ProgressReport::MAX_BODY),
    )
    .await;
    let body = match read {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if over {
                return too_large();
            }
            return (StatusCode::BAD_REQUEST, "body: could not be read\n".into());
        }
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "body: did not arrive within {} s\n",
                    PROGRESS_BODY_DEADLINE.as_secs()
                ),
            );
        }
    };
    let report = match ProgressReport::from_json(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")),
    };
    match nodes
        .report_progress(token, report.step, report.error.as_deref())
        .await
    {
        Ok(()) => (StatusCode::NO_CONTENT, String::new()),
        Err(e) => refused(e),
    }
}

/// The answer to a report the node registry refused.
fn refused(e: NodesError) -> (StatusCode, String) {
    match e {
        NodesError::Unauthenticated { reason } => {
            debug!(?reason, "progress report refused");
            (StatusCode::UNAUTHORIZED, format!("{}\n", reason.message()))
        }
        NodesError::InvalidArgument { field, message } => {
            (StatusCode::BAD_REQUEST, format!("{field}: {message}\n"))
        }
        e => {
            tracing::warn!(error = %e, "progress report failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n".into())
        }
    }
}

/// TLS for the agent listener: a CA-issued server certificate for `hosts`; client
/// certificates from the same CA are verified when presented.
pub fn tls(ca: &ControlPlaneCa, hosts: &[String]) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    crate::tls::install_crypto_provider();
    let issued = ca.issue_server_cert(hosts)?;
    let certs: Vec<CertificateDer<'static>> =
        rustls_pemfile::certs(&mut issued.chain_pem.as_bytes())
            .collect::<Result<_, _>>()
            .context("parsing the agent listener certificate")?;
    let key = rustls_pemfile::private_key(&mut issued.key_pem.as_bytes())
        .context("parsing the agent listener key")?
        .context("no key")?;
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca.cert_der().to_vec()))
        .context("adding the CA to the client-certificate roots")?;
    let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
        .allow_unauthenticated()
        .build()
        .context("building the client-certificate verifier")?;
    let mut cfg = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .context("agent listener TLS configuration")?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
