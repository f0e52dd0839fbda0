//! The control-plane CA: created on first start in the data directory (`ca.pem`, and its
//! private key sealed by a [`KeySealer`], the all-in-one server's master keyring), it issues the TLS server certificates of the listeners and the client
//! certificates of enrolled nodes. Its pin is the SHA-256 of the CA certificate's DER.
use std::fs;
use std::io::Write as _;
use std::net::IpAddr;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

pub use crate::model::fingerprint_der;

/// CA failures. Messages never contain key material.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// Reading or writing the CA files failed.
    #[error("control-plane CA file {path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The CA key file is readable by group or others.
    #[error("control-plane CA key {0} must not be readable by group or others (chmod 600)")]
    KeyPermissions(PathBuf),
    /// Certificate generation, parsing or signing failed.
    #[error("certificate error: {0}")]
    Cert(String),
    /// The sealed CA key could not be opened or stored.
    #[error("the control-plane CA key, sealed with the master key: {0}")]
    Sealed(String),
}

/// Keeps the CA's private key sealed at rest. Error texts carry no key material.
pub trait KeySealer {
    /// The key stored as `name`, opened; `None` when none is stored.
    fn open(&self, name: &str) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, String>;
    /// Seals `key` and stores it as `name` (replacing what was there).
    fn seal(&self, name: &str, key: &[u8]) -> Result<(), String>;
}

/// The name the CA key is sealed under.
const SEALED_KEY: &str = "ca.key";

impl From<rcgen::Error> for CaError {
    fn from(e: rcgen::Error) -> Self {
        CaError::Cert(e.to_string())
    }
}

/// A certificate issued by the CA, with its private key, both PEM.
pub struct IssuedCert {
    /// The leaf certificate followed by the CA certificate.
    pub chain_pem: String,
    /// The leaf's PKCS#8 private key.
    pub key_pem: String,
}

impl std::fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCert")
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The loaded control-plane CA.
pub struct ControlPlaneCa {
    cert_pem: String,
    cert_der: Vec<u8>,
    /// The pin (see [`Self::fingerprint`]), hashed once: every join token carries it.
    fingerprint: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for ControlPlaneCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlaneCa")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

const CA_VALIDITY_DAYS: i64 = 3650;
const LEAF_VALIDITY_DAYS: i64 = 365;

impl ControlPlaneCa {
    /// Loads `ca.pem` from `dir` and the CA key from `sealer`, creating both on first
    /// start. A plaintext `ca.key` an earlier release left is sealed, then removed. Returns
    /// the CA and whether it was created now.
    pub fn load_or_create_sealed(
        dir: &Path,
        sealer: &dyn KeySealer,
    ) -> Result<(Self, bool), CaError> {
        let cert_path = dir.join("ca.pem");
        let plain_key = dir.join("ca.key");
        if !cert_path.exists() {
            // The key first: a crash before the certificate is written starts over.
            let (cert_pem, key_pem) = Self::generate()?;
            sealer
                .seal(SEALED_KEY, key_pem.as_bytes())
                .map_err(CaError::Sealed)?;
            write_file(&cert_path, cert_pem.as_bytes(), 0o644)?;
            remove_plaintext(&plain_key)?;
            return Ok((Self::from_pem(&cert_pem, &key_pem)?, true));
        }
        let cert_pem = read(&cert_path)?;
        if let Some(key) = sealer.open(SEALED_KEY).map_err(CaError::Sealed)? {
            let key_pem = std::str::from_utf8(&key)
                .map_err(|_| CaError::Sealed("the opened key is not PEM".into()))?;
            let ca = Self::from_pem(&cert_pem, key_pem)?;
            // A crash between sealing and removing left the plaintext: remove it now, if it
            // is the sealed key. Another key (an earlier release started meanwhile and made
            // a CA of its own) is not deleted: an operator chooses.
            if plain_key.exists() {
                if read(&plain_key)?.as_bytes() != key.as_slice() {
                    return Err(CaError::Sealed(format!(
                        "{} differs from the sealed CA key: an earlier release may have made a \
                         new CA here; keep the CA your nodes trust (move the other aside) and \
                         start again",
                        plain_key.display()
                    )));
                }
                remove_plaintext(&plain_key)?;
            }
            return Ok((ca, false));
        }
        if !plain_key.exists() {
            return Err(CaError::Sealed(format!(
                "{} exists but its key does not (neither sealed nor as {})",
                cert_path.display(),
                plain_key.display()
            )));
        }
        check_private(&plain_key)?;
        let key_pem = zeroize::Zeroizing::new(read(&plain_key)?);
        let ca = Self::from_pem(&cert_pem, &key_pem)?;
        sealer
            .seal(SEALED_KEY, key_pem.as_bytes())
            .map_err(CaError::Sealed)?;
        remove_plaintext(&plain_key)?;
        tracing::info!(
            "sealed the control-plane CA key with the master key and removed the plaintext ca.key"
        );
        Ok((ca, false))
    }

    /// Loads `<stem>.pem`/`<stem>.key` from `dir`, creating both (a CA named
    /// `common_name`) when missing: the node CA, or the internal CA of a split deployment,
    /// kept apart from each other.
    pub fn load_or_create_named(
        dir: &Path,
        stem: &str,
        common_name: &str,
    ) -> Result<(Self, bool), CaError> {
        let cert_path = dir.join(format!("{stem}.pem"));
        let key_path = dir.join(format!("{stem}.key"));
        if cert_path.exists() && key_path.exists() {
            check_private(&key_path)?;
            let cert_pem = read(&cert_path)?;
            let key_pem = read(&key_path)?;
            return Ok((Self::from_pem(&cert_pem, &key_pem)?, false));
        }
        let (cert_pem, key_pem) = Self::generate_named(common_name)?;
        write_private(&key_path, key_pem.as_bytes())?;
        write_file(&cert_path, cert_pem.as_bytes(), 0o644)?;
        Ok((Self::from_pem(&cert_pem, &key_pem)?, true))
    }

    /// Builds a CA from PEM certificate and key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CaError> {
        let key = KeyPair::from_pem(key_pem)?;
        let cert_der = pem_to_der(cert_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Self {
            cert_pem: cert_pem.to_owned(),
            fingerprint: fingerprint_der(&cert_der),
            cert_der,
            issuer,
        })
    }

    /// Generates a fresh CA (PEM certificate, PEM key) without touching the disk.
    pub fn generate() -> Result<(String, String), CaError> {
        Self::generate_named("Levelrail control-plane CA")
    }

    /// Generates a fresh CA named `common_name`.
    pub fn generate_named(common_name: &str) -> Result<(String, String), CaError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        dn.push(DnType::OrganizationName, "Levelrail");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + Duration::days(CA_VALIDITY_DAYS);
        let cert = params.self_signed(&key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The pin: lowercase hex SHA-256 of the CA certificate's DER encoding.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Issues a TLS server certificate for the given host names and addresses.
    pub fn issue_server_cert(&self, hosts: &[String]) -> Result<IssuedCert, CaError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            hosts.first().map(String::as_str).unwrap_or("levelrail"),
        );
        params.distinguished_name = dn;
        params.subject_alt_names = hosts.iter().map(|h| san(h)).collect::<Result<_, _>>()?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign_leaf(params, &key)
    }

    /// Issues a TLS client certificate naming a service: common name `name`, and `uri` as
    /// its only subject alternative name (what the peer checks).
    pub fn issue_client_cert(&self, name: &str, uri: &str) -> Result<IssuedCert, CaError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.subject_alt_names = vec![SanType::URI(
            uri.try_into()
                .map_err(|e: rcgen::Error| CaError::Cert(e.to_string()))?,
        )];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign_leaf(params, &key)
    }

    /// Signs a node's certificate signing request. The certificate's common name and only
    /// DNS SAN are the node id, whatever the request asked for; it is valid for client auth.
    pub fn sign_node_csr(&self, csr_pem: &str, node_id: &str) -> Result<String, CaError> {
        let csr = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, node_id);
        params.distinguished_name = dn;
        params.subject_alt_names = vec![san(node_id)?];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + Duration::days(LEAF_VALIDITY_DAYS);
        let cert = params.signed_by(&csr.public_key, &self.issuer)?;
        Ok(cert.pem())
    }

    fn sign_leaf(
        &self,
        mut params: CertificateParams,
        key: &KeyPair,
    ) -> Result<IssuedCert, CaError> {
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + Duration::days(LEAF_VALIDITY_DAYS);
        let cert = params.signed_by(key, &self.issuer)?;
        Ok(IssuedCert {
            chain_pem: format!("{}{}", cert.pem(), self.cert_pem),
            key_pem: key.serialize_pem(),
        })
    }
}

fn san(host: &str) -> Result<SanType, CaError> {
    Ok(match host.parse::<IpAddr>() {
        Ok(ip) => SanType::IpAddress(ip),
        Err(_) => SanType::DnsName(
            host.to_owned()
                .try_into()
                .map_err(|e: rcgen::Error| CaError::Cert(e.to_string()))?,
        ),
    })
}

fn pem_to_der(pem: &str) -> Result<Vec<u8>, CaError> {
    let mut reader = pem.as_bytes();
    match rustls_pemfile::certs(&mut reader).next() {
        Some(Ok(der)) => Ok(der.to_vec()),
        _ => Err(CaError::Cert("no certificate in PEM".into())),
    }
}

/// Refuses a key file its group or others may read.
fn check_private(path: &Path) -> Result<(), CaError> {
    let mode = fs::metadata(path)
        .map_err(|source| CaError::Io {
            path: path.to_owned(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(CaError::KeyPermissions(path.to_owned()));
    }
    Ok(())
}

/// Removes a plaintext key file, if any, and makes the removal durable.
fn remove_plaintext(path: &Path) -> Result<(), CaError> {
    let io = |source| CaError::Io {
        path: path.to_owned(),
        source,
    };
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    }
    match path.parent() {
        Some(dir) => fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io),
        None => Ok(()),
    }
}

fn read(path: &Path) -> Result<String, CaError> {
    fs::read_to_string(path).map_err(|source| CaError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes a file readable by its owner only (0600), created atomically.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CaError> {
    write_file(path, bytes, 0o600)
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CaError> {
    let io = |source| CaError::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)).map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Keys kept in memory, "sealed" by being out of the directory.
    #[derive(Default)]
    struct MemorySealer(Mutex<HashMap<String, Vec<u8>>>);

    impl KeySealer for MemorySealer {
        fn open(&self, name: &str) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, String> {
            Ok(self.0.lock().unwrap().get(name).cloned().map(Into::into))
        }
        fn seal(&self, name: &str, key: &[u8]) -> Result<(), String> {
            self.0.lock().unwrap().insert(name.into(), key.to_vec());
            Ok(())
        }
    }

    fn plaintext_ca(dir: &Path) -> (ControlPlaneCa, bool) {
        ControlPlaneCa::load_or_create_named(dir, "ca", "Levelrail control-plane CA").unwrap()
    }

    #[test]
    fn the_ca_is_created_once_with_its_key_sealed_and_reloaded_with_the_same_pin() {
        let dir = tempfile::tempdir().unwrap();
        let sealer = MemorySealer::default();
        let (ca, created) = ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer).unwrap();
        assert!(created);
        assert!(
            !dir.path().join("ca.key").exists(),
            "a plaintext key on disk"
        );
        assert!(sealer.0.lock().unwrap().contains_key("ca.key"));
        let (again, created) = ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer).unwrap();
        assert!(!created);
        assert_eq!(ca.fingerprint(), again.fingerprint());
        assert_eq!(ca.fingerprint().len(), 64);
        // The pin, hashed once at load, is the certificate's.
        assert_eq!(ca.fingerprint(), fingerprint_der(ca.cert_der()));
        // The certificate without its key is an error, not a new CA.
        let lost = MemorySealer::default();
        assert!(matches!(
            ControlPlaneCa::load_or_create_sealed(dir.path(), &lost),
            Err(CaError::Sealed(_))
        ));
    }

    #[test]
    fn a_plaintext_ca_key_of_an_earlier_release_is_sealed_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (before, _) = plaintext_ca(dir.path());
        let mode = fs::metadata(dir.path().join("ca.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let sealer = MemorySealer::default();
        let (after, created) = ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer).unwrap();
        assert!(!created);
        assert_eq!(before.fingerprint(), after.fingerprint());
        assert!(!dir.path().join("ca.key").exists());
        let (again, _) = ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer).unwrap();
        assert_eq!(before.fingerprint(), again.fingerprint());
    }

    #[test]
    fn a_plaintext_key_other_than_the_sealed_one_is_kept_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sealer = MemorySealer::default();
        ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer).unwrap();
        // An earlier release started meanwhile: it found no ca.key and made its own.
        let (_, other_key) = ControlPlaneCa::generate().unwrap();
        write_private(&dir.path().join("ca.key"), other_key.as_bytes()).unwrap();
        assert!(matches!(
            ControlPlaneCa::load_or_create_sealed(dir.path(), &sealer),
            Err(CaError::Sealed(_))
        ));
        assert!(
            dir.path().join("ca.key").exists(),
            "the other key was deleted"
        );
    }

    #[test]
    fn a_world_readable_ca_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        plaintext_ca(dir.path());
        fs::set_permissions(dir.path().join("ca.key"), fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            ControlPlaneCa::load_or_create_named(dir.path(), "ca", "CA"),
            Err(CaError::KeyPermissions(_))
        ));
        assert!(matches!(
            ControlPlaneCa::load_or_create_sealed(dir.path(), &MemorySealer::default()),
            Err(CaError::KeyPermissions(_))
        ));
    }

    #[test]
    fn a_server_certificate_chains_to_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, _) = plaintext_ca(dir.path());
        let issued = ca
            .issue_server_cert(&["localhost".into(), "127.0.0.1".into()])
            .unwrap();
        let mut reader = issued.chain_pem.as_bytes();
        let certs: Vec<_> = rustls_pemfile::certs(&mut reader)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[1].as_ref(), ca.cert_der());
    }
}
