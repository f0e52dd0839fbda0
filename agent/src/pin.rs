//! CA pinning: the TLS server-certificate verifier that fails closed.
//!
//! The pin is the lowercase hex SHA-256 of the control-plane CA certificate's DER. The
//! verifier accepts a server only when
//! 1. one of the presented certificates (or the CA stored in the node identity) hashes to the
//!    pin, and
//! 2. the leaf chains to that certificate as the *only* trust anchor (rustls'
//!    `WebPkiServerVerifier` over a one-certificate root store: signatures, validity dates,
//!    the `serverAuth` extended key usage — so a node's client certificate from the same CA is
//!    not a server certificate).
//!
//! The one tolerated failure is a host-name mismatch: the agent may dial an IP address the
//! server certificate does not name, and the pin already identifies the control plane.
//! `WebPkiServerVerifier` checks the name last, after the chain, so that error implies the
//! chain verified. There is no OS trust store and no trust on first use. A rejection is
//! remembered ([`PinnedCaVerifier::rejected`]) so callers can tell "wrong CA" (exit 3) from
//! "unreachable" (retry); the handshake fails before any application byte is written.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use sha2::{Digest as _, Sha256};

/// A CA pin: SHA-256 of the CA certificate's DER encoding.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of_der(der: &[u8]) -> Self {
        Self(Sha256::digest(der).into())
    }

    /// Parses the strict form carried by join tokens: 64 lowercase hex digits.
    pub fn parse_strict(s: &str) -> Option<Self> {
        if s.len() != 64 || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(Self(out))
    }

    /// Parses an operator-supplied pin: the strict form, also accepting upper case, `:`
    /// separators (as `openssl x509 -fingerprint -sha256` prints) and a `sha256:` prefix.
    pub fn parse_lenient(s: &str) -> Option<Self> {
        let s = s.trim();
        let s = s
            .strip_prefix("sha256:")
            .or_else(|| s.strip_prefix("SHA256:"))
            .unwrap_or(s);
        let hex: String = s.chars().filter(|c| *c != ':').collect();
        Self::parse_strict(&hex.to_ascii_lowercase())
    }

    /// Whether `der` is the pinned certificate.
    pub fn matches(&self, der: &[u8]) -> bool {
        *self == Self::of_der(der)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Why the verifier refused a server. Carried inside the rustls error; logged by callers.
#[derive(Debug, thiserror::Error)]
enum PinError {
    #[error("no presented certificate matches the pinned CA fingerprint {0}")]
    NoMatch(Fingerprint),
    #[error("the pinned CA certificate is not a usable trust anchor: {0}")]
    BadAnchor(String),
    #[error("the server certificate does not chain to the pinned CA: {0}")]
    Chain(rustls::Error),
}

/// The fail-closed server verifier. See the module documentation.
#[derive(Debug)]
pub struct PinnedCaVerifier {
    pin: Fingerprint,
    known_ca: Option<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
    rejected: AtomicBool,
}

impl PinnedCaVerifier {
    /// A verifier for `pin`, using the ring provider's signature algorithms.
    pub fn new(pin: Fingerprint) -> Self {
        Self {
            pin,
            known_ca: None,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            rejected: AtomicBool::new(false),
        }
    }

    /// Also consider `ca` (the CA stored in the node identity) as the anchor when the server
    /// does not present it. It is used only if it hashes to the pin.
    pub fn with_known_ca(mut self, ca: CertificateDer<'static>) -> Self {
        self.known_ca = Some(ca);
        self
    }

    /// The pin this verifier enforces.
    pub fn pin(&self) -> Fingerprint {
        self.pin
    }

    /// The crypto provider (ring) this verifier was built with.
    pub fn provider(&self) -> Arc<CryptoProvider> {
        self.provider.clone()
    }

    /// Whether any handshake through this verifier was refused by the pin check.
    pub fn rejected(&self) -> bool {
        self.rejected.load(Ordering::SeqCst)
    }

    fn reject(&self, why: PinError) -> rustls::Error {
        self.rejected.store(true, Ordering::SeqCst);
        tracing::warn!(reason = %why, "refused the control plane's certificate");
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(why))))
    }

    fn anchor<'a>(
        &'a self,
        end_entity: &'a CertificateDer<'_>,
        intermediates: &'a [CertificateDer<'_>],
    ) -> Option<&'a [u8]> {
        std::iter::once(end_entity.as_ref())
            .chain(intermediates.iter().map(|c| c.as_ref()))
            .chain(self.known_ca.iter().map(|c| c.as_ref()))
            .find(|der| self.pin.matches(der))
    }
}

impl ServerCertVerifier for PinnedCaVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(anchor) = self.anchor(end_entity, intermediates) else {
            return Err(self.reject(PinError::NoMatch(self.pin)));
        };
        let mut roots = RootCertStore::empty();
        if let Err(e) = roots.add(CertificateDer::from(anchor.to_vec())) {
            return Err(self.reject(PinError::BadAnchor(e.to_string())));
        }
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), self.provider())
            .build()
            .map_err(|e| self.reject(PinError::BadAnchor(e.to_string())))?;
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Ok(verified) => Ok(verified),
            // Checked after the chain by WebPkiServerVerifier: the chain is good.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            Err(e) => Err(self.reject(PinError::Chain(e))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
