//! HTTPS for the fake clouds whose official SDKs refuse plain HTTP (Azure): a throw-away test
//! CA issuing a server certificate for the loopback names, and an accept loop serving an
//! axum router over rustls. Clients trust the fake by adding [`TestCa::ca_pem`] to their
//! roots (`ApiClient::with_extra_root`).
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A test CA and the server configuration it issued.
#[derive(Clone)]
pub struct TestCa {
    ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl TestCa {
    /// A fresh CA and a server certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn generate() -> std::io::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let err = |e: rcgen::Error| std::io::Error::other(e.to_string());
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca = CertificateParams::default();
        ca.distinguished_name
            .push(DnType::CommonName, "Levelrail fake cloud test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = KeyPair::generate().map_err(err)?;
        let mut leaf = CertificateParams::new(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ])
        .map_err(err)?;
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(err)?;
        let chain: Vec<CertificateDer<'static>> =
            vec![leaf_cert.der().clone(), ca_cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let mut server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(std::io::Error::other)?;
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Serves `app` over TLS on `listener` until the task is aborted.
    pub(crate) fn serve(&self, listener: TcpListener, app: axum::Router) -> JoinHandle<()> {
        let acceptor = tokio_rustls::TlsAcceptor::from(self.server.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
                });
            }
        })
    }
}
