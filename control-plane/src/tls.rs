//! TLS for the listeners (rustls, ring): certificate files given by the operator, or a
//! server certificate issued by the control-plane CA.
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use levelrail_provisioner::enroll::ControlPlaneCa;
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Installs ring as the process-wide rustls provider (idempotent).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A server config from PEM files.
pub fn from_files(cert: &Path, key: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let cert_pem = std::fs::read(cert).with_context(|| format!("reading {}", cert.display()))?;
    let key_pem = std::fs::read(key).with_context(|| format!("reading {}", key.display()))?;
    from_pem(&cert_pem, &key_pem)
}

/// A server config with a certificate for `hosts` issued by the CA.
pub fn from_ca(ca: &ControlPlaneCa, hosts: &[String]) -> anyhow::Result<Arc<ServerConfig>> {
    let issued = ca.issue_server_cert(hosts)?;
    from_pem(issued.chain_pem.as_bytes(), issued.key_pem.as_bytes())
}

/// A certificate chain and its private key from PEM.
pub fn chain_and_key(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<_, _>>()
        .context("parsing the certificate chain")?;
    anyhow::ensure!(
        !certs.is_empty(),
        "the certificate file holds no certificate"
    );
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &key_pem[..])
        .context("parsing the private key")?
        .context("the key file holds no private key")?;
    Ok((certs, key))
}

fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<Arc<ServerConfig>> {
    install_crypto_provider();
    let (certs, key) = chain_and_key(cert_pem, key_pem)?;
    let mut cfg = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("building the TLS configuration")?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
