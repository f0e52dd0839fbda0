//! Test-only PKI built with rcgen, shaped like the control-plane CA
//! (`provisioner/src/enroll/ca.rs`): a path-length-0 CA issuing server and client leaves.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::CertificateDer;

use crate::pin::Fingerprint;

/// A CA with its key.
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
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    pub(crate) fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    pub(crate) fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of_der(self.issuer.der())
    }

    /// A server leaf for `hosts`.
    pub(crate) fn server_leaf(&self, hosts: &[&str]) -> CertificateDer<'static> {
        self.leaf(hosts, ExtendedKeyUsagePurpose::ServerAuth, None)
    }

    /// A leaf with the given extended key usage, optionally already expired.
    pub(crate) fn leaf(
        &self,
        hosts: &[&str],
        eku: ExtendedKeyUsagePurpose,
        expired: Option<()>,
    ) -> CertificateDer<'static> {
        let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        let mut params = CertificateParams::new(hosts).unwrap();
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![eku];
        if expired.is_some() {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        params.signed_by(&key, &self.issuer).unwrap().der().clone()
    }

    /// A client certificate (CN = `node_id`) for `key`, PEM.
    pub(crate) fn client_cert_pem(&self, key: &KeyPair, node_id: &str) -> String {
        let mut params = CertificateParams::new(vec![node_id.to_owned()]).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, node_id);
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.signed_by(key, &self.issuer).unwrap().pem()
    }
}
