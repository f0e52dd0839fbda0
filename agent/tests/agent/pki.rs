//! Test PKI: a control-plane-like CA built with rcgen (as `provisioner/src/enroll/ca.rs`
//! does) and TLS server configurations for the fake control plane and the MITM server.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, CertifiedIssuer,
    DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use sha2::{Digest as _, Sha256};

/// A control-plane-like CA.
pub(crate) struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub(crate) fn new(name: &str) -> Self {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        Self {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    pub(crate) fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// Lowercase hex SHA-256 of the CA certificate DER: the pin.
    pub(crate) fn fingerprint(&self) -> String {
        hex::encode(Sha256::digest(self.issuer.der()))
    }

    /// A server leaf for `localhost` (the agent dials 127.0.0.1: a tolerated name mismatch)
    /// and its key.
    pub(crate) fn server_leaf(&self) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), key)
    }

    /// Signs a node CSR: CN and DNS SAN = `node_id`, client auth only.
    pub(crate) fn sign_csr(&self, csr_pem: &str, node_id: &str) -> String {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem).unwrap();
        let mut params = CertificateParams::new(vec![node_id.to_owned()]).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, node_id);
        params.distinguished_name = dn;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params
            .signed_by(&csr.public_key, &self.issuer)
            .unwrap()
            .pem()
    }
}

/// A TLS server config presenting `chain` (leaf first), optionally asking for client
/// certificates from `client_ca` (optional, as `Enroll` has none), ALPN h2.
pub(crate) fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<&TestCa>,
) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}
