//! The node identity: what enrollment produced, kept in `APP_AGENT_IDENTITY_FILE`.
//!
//! A JSON document (`node_id`, `node_name`, `control_plane_addr`, `ca_fingerprint`,
//! `certificate_pem`, `key_pem`, `ca_pem`, `heartbeat_interval_seconds`) written atomically
//! (temporary file in the same directory, fsync, rename) with mode 0600, in a directory
//! created 0700. It is validated on load: certificate and key parse and belong together,
//! and the stored CA hashes to the stored pin. A file that exists but is invalid is a
//! configuration error, never a reason to enroll again behind the operator's back.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::{ControlPlaneAddr, IDENTITY_FILE};
use crate::connect::ClientAuth;
use crate::exit::AgentError;
use crate::pin::Fingerprint;

/// Heartbeat period when the control plane suggests none.
pub const DEFAULT_HEARTBEAT_SECONDS: u32 = 30;

/// A node identity. `Debug` never shows the private key.
#[derive(Serialize, Deserialize)]
pub struct Identity {
    /// `node_…`, the CN of the client certificate.
    pub node_id: String,
    /// The name the node enrolled with.
    pub node_name: String,
    /// The control plane it enrolled with (`host:port`).
    pub control_plane_addr: String,
    /// The pinned CA fingerprint (hex SHA-256 of the CA certificate DER).
    pub ca_fingerprint: String,
    /// The client certificate, PEM.
    pub certificate_pem: String,
    #[serde(with = "secret_pem")]
    key_pem: SecretString,
    /// The control-plane CA certificate, PEM.
    pub ca_pem: String,
    /// Heartbeat period suggested at enrollment.
    #[serde(default = "default_interval")]
    pub heartbeat_interval_seconds: u32,
}

fn default_interval() -> u32 {
    DEFAULT_HEARTBEAT_SECONDS
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("node_id", &self.node_id)
            .field("node_name", &self.node_name)
            .field("control_plane_addr", &self.control_plane_addr)
            .field("ca_fingerprint", &self.ca_fingerprint)
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

mod secret_pem {
    use secrecy::{ExposeSecret as _, SecretString};
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(key: &SecretString, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(key.expose_secret())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
        String::deserialize(d).map(SecretString::from)
    }
}

impl Identity {
    /// Assembles an identity and checks it is usable (see [`Identity::validate`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        node_id: String,
        node_name: String,
        addr: &ControlPlaneAddr,
        pin: Fingerprint,
        certificate_pem: String,
        key_pem: SecretString,
        ca_pem: String,
        heartbeat_interval_seconds: u32,
    ) -> Result<Self, String> {
        let identity = Self {
            node_id,
            node_name,
            control_plane_addr: addr.to_string(),
            ca_fingerprint: pin.to_string(),
            certificate_pem,
            key_pem,
            ca_pem,
            heartbeat_interval_seconds,
        };
        identity.validate()?;
        Ok(identity)
    }

    /// Reads the identity at `path`: `Ok(None)` when there is none yet.
    pub fn load(path: &Path) -> Result<Option<Self>, AgentError> {
        let invalid = |why: String| {
            AgentError::config(
                IDENTITY_FILE,
                format!(
                    "{} is not a usable node identity ({why}); delete it to enroll again",
                    path.display()
                ),
            )
        };
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(invalid(e.to_string())),
        };
        let identity: Self = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        identity.validate().map_err(invalid)?;
        tighten_permissions(path);
        Ok(Some(identity))
    }

    /// Writes the identity to `path` atomically, mode 0600, creating the directory 0700.
    pub fn save(&self, path: &Path) -> Result<(), AgentError> {
        let fail = |e: std::io::Error| {
            AgentError::Unexpected(format!(
                "cannot write the node identity {}: {e}",
                path.display()
            ))
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        // tempfile creates the file 0600 (O_EXCL) in the target directory, so the rename is atomic.
        let mut tmp = tempfile::Builder::new()
            .prefix(".identity")
            .tempfile_in(dir)
            .map_err(fail)?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(fail)?;
        tmp.write_all(&json).map_err(fail)?;
        tmp.as_file().sync_all().map_err(fail)?;
        tmp.persist(path).map_err(|e| fail(e.error))?;
        if let Ok(d) = fs::File::open(dir) {
            // Make the rename durable; failure here only weakens crash safety.
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Checks the certificate, key and CA parse, belong together and match the pin.
    pub fn validate(&self) -> Result<(), String> {
        if self.node_id.is_empty() {
            return Err("node_id is empty".into());
        }
        ControlPlaneAddr::parse(&self.control_plane_addr).map_err(|_| "bad control_plane_addr")?;
        let pin = self.pin().ok_or("bad ca_fingerprint")?;
        let ca = first_cert(&self.ca_pem).ok_or("ca_pem holds no certificate")?;
        if !pin.matches(&ca) {
            return Err("ca_pem does not match ca_fingerprint".into());
        }
        let cert =
            first_cert(&self.certificate_pem).ok_or("certificate_pem holds no certificate")?;
        let key = rcgen::KeyPair::from_pem(self.key_pem.expose_secret())
            .map_err(|_| "key_pem holds no usable private key")?;
        if !certificate_has_key(&cert, &key) {
            return Err("certificate_pem does not belong to key_pem".into());
        }
        Ok(())
    }

    /// The pinned CA fingerprint.
    pub fn pin(&self) -> Option<Fingerprint> {
        Fingerprint::parse_strict(&self.ca_fingerprint)
    }

    /// The control plane this identity enrolled with.
    pub fn addr(&self) -> Option<ControlPlaneAddr> {
        ControlPlaneAddr::parse(&self.control_plane_addr).ok()
    }

    /// The stored CA certificate, DER.
    pub fn ca_der(&self) -> Option<CertificateDer<'static>> {
        first_cert(&self.ca_pem)
    }

    /// How often to heartbeat (at least one second).
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_secs(u64::from(self.heartbeat_interval_seconds.max(1)))
    }

    /// The client certificate and key for mTLS.
    pub(crate) fn client_auth(&self) -> Result<ClientAuth, AgentError> {
        let bad = |what: &str| AgentError::Unexpected(format!("node identity: unusable {what}"));
        let chain = certs(&self.certificate_pem);
        if chain.is_empty() {
            return Err(bad("certificate"));
        }
        let mut reader = self.key_pem.expose_secret().as_bytes();
        let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut reader)
            .ok()
            .flatten()
            .ok_or_else(|| bad("private key"))?;
        Ok(ClientAuth { chain, key })
    }
}

/// Whether the certificate's public key is `key`'s.
pub(crate) fn certificate_has_key(cert: &CertificateDer<'_>, key: &rcgen::KeyPair) -> bool {
    x509_parser::parse_x509_certificate(cert).is_ok_and(|(_, parsed)| {
        parsed.public_key().subject_public_key.data.as_ref() == key.public_key_raw()
    })
}

/// Every certificate in a PEM text.
pub(crate) fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::certs(&mut reader)
        .filter_map(Result::ok)
        .collect()
}

fn first_cert(pem: &str) -> Option<CertificateDer<'static>> {
    certs(pem).into_iter().next()
}

/// An identity readable by group or others is fixed to 0600 (and logged): the key may
/// already be exposed, but leaving it so helps no one.
fn tighten_permissions(path: &Path) {
    let Ok(meta) = fs::metadata(path) else { return };
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(path = %path.display(), "node identity was readable by others; setting mode 0600");
        if let Err(e) = fs::set_permissions(path, fs::Permissions::from_mode(0o600)) {
            tracing::warn!(error = %e, "could not restrict the node identity's permissions");
        }
    }
}

#[cfg(test)]
mod tests;
