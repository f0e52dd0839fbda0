//! Dialling the control plane: TCP, then TLS with the pin verifier, then HTTP/2 (tonic).
//!
//! The TLS handshake runs inside the connector handed to tonic
//! (`Endpoint::connect_with_connector`), so tonic gets a stream only once the server chain
//! has passed [`PinnedCaVerifier`]; until then nothing but the TLS handshake itself has been
//! written to the socket, and a server with another CA receives no application byte.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::config::ControlPlaneAddr;
use crate::exit::AgentError;
use crate::pin::{Fingerprint, PinnedCaVerifier};

/// Longest per-call deadline for RPCs.
const RPC_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a single TCP + TLS connection attempt may take.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client certificate and key for mTLS.
pub(crate) struct ClientAuth {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
}

/// Why a connection attempt failed.
#[derive(Debug)]
pub(crate) enum DialError {
    /// The pin verifier refused the server: do not retry, do not send anything.
    PinRejected,
    /// Anything else (refused, timed out, TLS alert, …): worth retrying.
    Failed(String),
}

/// Builds channels to one control plane with one pin (and optionally a client identity).
#[derive(Debug, Clone)]
pub(crate) struct Dialer {
    addr: ControlPlaneAddr,
    tls: Arc<ClientConfig>,
    verifier: Arc<PinnedCaVerifier>,
}

impl Dialer {
    /// A dialer for `addr` that accepts only chains to the CA whose fingerprint is `pin`.
    /// `known_ca` is the CA stored in the identity; `client` the node's certificate.
    pub(crate) fn new(
        addr: &ControlPlaneAddr,
        pin: Fingerprint,
        known_ca: Option<CertificateDer<'static>>,
        client: Option<ClientAuth>,
    ) -> Result<Self, AgentError> {
        let mut verifier = PinnedCaVerifier::new(pin);
        if let Some(ca) = known_ca {
            verifier = verifier.with_known_ca(ca);
        }
        let verifier = Arc::new(verifier);
        let tls_err = |e: rustls::Error| AgentError::Unexpected(format!("TLS client setup: {e}"));
        let builder = ClientConfig::builder_with_provider(verifier.provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?
            .dangerous()
            .with_custom_certificate_verifier(verifier.clone());
        let mut tls = match client {
            None => builder.with_no_client_auth(),
            Some(auth) => builder
                .with_client_auth_cert(auth.chain, auth.key)
                .map_err(tls_err)?,
        };
        tls.alpn_protocols = vec![b"h2".to_vec()];
        // No 0-RTT: nothing may be sent before the server is verified.
        tls.enable_early_data = false;
        Ok(Self {
            addr: addr.clone(),
            tls: Arc::new(tls),
            verifier,
        })
    }

    /// Whether the pin verifier has refused the server on any connection so far.
    pub(crate) fn pin_rejected(&self) -> bool {
        self.verifier.rejected()
    }

    /// Connects now (TCP + TLS + HTTP/2). `timeout` is what is left of the retry budget: a
    /// connect attempt lasts at most that (capped at 10 s), an RPC at most that (between
    /// 1 s and 30 s). Later reconnections of the returned channel use the same verifier.
    pub(crate) async fn connect(&self, timeout: Duration) -> Result<Channel, DialError> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
            .map_err(|e| DialError::Failed(e.to_string()))?
            .connect_timeout(timeout.clamp(Duration::from_millis(100), MAX_CONNECT_TIMEOUT))
            .timeout(timeout.clamp(Duration::from_secs(1), RPC_TIMEOUT));
        let connector = TlsConnector::from(self.tls.clone());
        let (host, port) = (self.addr.host().to_owned(), self.addr.port());
        let server_name = self.addr.server_name();
        let connect = tower::service_fn(move |_: Uri| {
            let (connector, host, server_name) =
                (connector.clone(), host.clone(), server_name.clone());
            async move {
                let tcp = TcpStream::connect((host.as_str(), port)).await?;
                tcp.set_nodelay(true)?;
                let tls = connector.connect(server_name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        });
        match endpoint.connect_with_connector(connect).await {
            Ok(channel) => Ok(channel),
            Err(_) if self.pin_rejected() => Err(DialError::PinRejected),
            Err(e) => Err(DialError::Failed(error_chain(&e))),
        }
    }

    /// This host's address on the route to the control plane, when it is not loopback.
    /// Cheap: a UDP `connect` only selects a route, it sends nothing.
    pub(crate) async fn local_addresses(&self) -> Vec<String> {
        let target = (self.addr.host(), self.addr.port());
        let Some(remote) = tokio::net::lookup_host(target)
            .await
            .ok()
            .and_then(|mut a| a.next())
        else {
            return Vec::new();
        };
        let bind: SocketAddr = match remote {
            SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), 0).into(),
            SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), 0).into(),
        };
        let local = std::net::UdpSocket::bind(bind)
            .and_then(|s| s.connect(remote).and_then(|()| s.local_addr()))
            .map(|a| a.ip());
        match local {
            Ok(ip) if !ip.is_loopback() && !ip.is_unspecified() => vec![ip.to_string()],
            _ => Vec::new(),
        }
    }
}

/// `e` and its sources, joined with `: ` (one line).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}
