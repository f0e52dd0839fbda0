//! The internal PKI of a split deployment: `levelrail pki init` keeps an internal CA, apart
//! from the node CA, and issues from it the credentials service's server certificate and the
//! provisioner's client certificate. The credentials service's broker listener trusts only
//! this CA and only the provisioner's identity ([`PROVISIONER_IDENTITY`], the certificate's
//! URI name); the provisioner trusts only this CA for the credentials service.
//!
//! Rotation: run `levelrail pki init` again. The CA is reused (its key never leaves the
//! directory), fresh leaf certificates replace the old files, and each service reads its
//! files when it starts, so restart the credentials service, then the provisioners one at
//! a time. Old and new leaves chain to the same CA, so nothing breaks in between. To
//! replace the CA itself, move the directory aside, run `pki init`, and restart everything.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::enroll::ca::write_private;
use levelrail_provisioner::grpc::PeerCertificates;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;

/// The URI name of the provisioner's client certificate.
pub const PROVISIONER_IDENTITY: &str = "urn:levelrail:service:provisioner";
/// The name the credentials service's certificate holds for the provisioner to check.
pub const CREDENTIALS_HOST: &str = "levelrail-credentials";

/// The files `pki init` writes into its directory.
#[derive(Debug, Clone)]
pub struct PkiFiles {
    /// The internal CA certificate (every service's trust anchor).
    pub ca: PathBuf,
    /// The credentials service's certificate chain and key.
    pub credentials: (PathBuf, PathBuf),
    /// The provisioner's client certificate chain and key.
    pub provisioner: (PathBuf, PathBuf),
    /// PostgreSQL's server certificate chain and key, where it is asked for: the services
    /// reach a database on another host only with `sslmode=verify-full`, trusting this CA.
    pub postgres: (PathBuf, PathBuf),
}

impl PkiFiles {
    /// The files in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("internal-ca.pem"),
            credentials: (dir.join("credentials.pem"), dir.join("credentials.key")),
            provisioner: (dir.join("provisioner.pem"), dir.join("provisioner.key")),
            postgres: (dir.join("postgres.pem"), dir.join("postgres.key")),
        }
    }
}

/// Creates the internal CA in `dir` (or reuses it) and issues both services' certificates:
/// the credentials service's for `hosts` (with [`CREDENTIALS_HOST`], `localhost` and
/// `127.0.0.1` always included); and PostgreSQL's for `postgres_hosts` when any is given.
pub fn init(dir: &Path, hosts: &[String], postgres_hosts: &[String]) -> anyhow::Result<PkiFiles> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (ca, created) =
        ControlPlaneCa::load_or_create_named(dir, "internal-ca", "Levelrail internal CA")?;
    if created {
        tracing::info!(fingerprint = %ca.fingerprint(), "created the internal CA");
    }
    let mut names: Vec<String> = [CREDENTIALS_HOST, "localhost", "127.0.0.1"]
        .iter()
        .map(|h| (*h).to_owned())
        .collect();
    for h in hosts {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    let files = PkiFiles::in_dir(dir);
    let server = ca.issue_server_cert(&names)?;
    write_pair(&files.credentials, &server.chain_pem, &server.key_pem)?;
    let client = ca.issue_client_cert("levelrail-provisioner", PROVISIONER_IDENTITY)?;
    write_pair(&files.provisioner, &client.chain_pem, &client.key_pem)?;
    if !postgres_hosts.is_empty() {
        let database = ca.issue_server_cert(postgres_hosts)?;
        write_pair(&files.postgres, &database.chain_pem, &database.key_pem)?;
    }
    Ok(files)
}

fn write_pair(paths: &(PathBuf, PathBuf), chain: &str, key: &str) -> anyhow::Result<()> {
    std::fs::write(&paths.0, chain).with_context(|| format!("writing {}", paths.0.display()))?;
    write_private(&paths.1, key.as_bytes())?;
    Ok(())
}

/// The internal channel's files as a service is given them.
#[derive(Debug, Clone, clap::Args)]
pub struct InternalTlsArgs {
    /// The internal CA certificate (PEM) from `levelrail pki init`.
    #[arg(long, env = "LEVELRAIL_INTERNAL_CA")]
    pub internal_ca: PathBuf,
    /// This service's certificate chain (PEM) from `levelrail pki init`.
    #[arg(long, env = "LEVELRAIL_INTERNAL_CERT")]
    pub internal_cert: PathBuf,
    /// This service's private key (PEM).
    #[arg(long, env = "LEVELRAIL_INTERNAL_KEY")]
    pub internal_key: PathBuf,
}

impl InternalTlsArgs {
    /// The three files' contents.
    pub fn read(&self) -> anyhow::Result<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        Ok((
            read(&self.internal_ca)?,
            read(&self.internal_cert)?,
            read(&self.internal_key)?,
        ))
    }

    /// The broker listener's TLS: this service's certificate, and a client certificate from
    /// the internal CA required of every connection.
    pub fn server_config(&self) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        crate::tls::install_crypto_provider();
        let (ca, cert, key) = self.read()?;
        let mut roots = RootCertStore::empty();
        for der in rustls_pemfile::certs(&mut ca.as_slice()) {
            roots
                .add(der.context("parsing --internal-ca")?)
                .context("adding --internal-ca to the trusted roots")?;
        }
        anyhow::ensure!(!roots.is_empty(), "--internal-ca holds no certificate");
        let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
            .build()
            .context("building the client-certificate verifier")?;
        let (certs, key) =
            crate::tls::chain_and_key(&cert, &key).context("--internal-cert / --internal-key")?;
        let mut cfg = rustls::ServerConfig::builder()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .context("the broker listener's TLS configuration")?;
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(cfg))
    }
}

/// Whether the verified client chain of a request names `identity` (the leaf's URI name).
pub fn presents(peer: Option<&PeerCertificates>, identity: &str) -> bool {
    let Some(leaf) = peer.and_then(|p| p.0.first()) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
        return false;
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return false;
    };
    san.value.general_names.iter().any(
        |name| matches!(name, x509_parser::extensions::GeneralName::URI(uri) if *uri == identity),
    )
}

/// Refuses, with PERMISSION_DENIED, every request whose client certificate is not the
/// provisioner's (the TLS layer has verified the chain; this checks whose it is).
pub async fn require_provisioner(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if presents(
        req.extensions().get::<PeerCertificates>(),
        PROVISIONER_IDENTITY,
    ) {
        return next.run(req).await;
    }
    tracing::warn!("broker call refused: the client certificate is not the provisioner's");
    tonic::Status::permission_denied("only the provisioner may call the credential broker")
        .into_http::<axum::body::Body>()
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DNS names of the first certificate in `pem`.
    fn dns_names(pem: &[u8]) -> Vec<String> {
        let der = rustls_pemfile::certs(&mut &pem[..])
            .next()
            .expect("a certificate")
            .expect("PEM");
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).expect("X.509");
        let san = cert
            .subject_alternative_name()
            .expect("SAN")
            .expect("present");
        san.value
            .general_names
            .iter()
            .filter_map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => Some((*d).to_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn postgres_gets_a_certificate_for_its_names_only_when_asked() {
        let dir = tempfile::tempdir().expect("dir");
        let files = init(dir.path(), &[], &[]).expect("init");
        assert!(!files.postgres.0.exists() && !files.postgres.1.exists());

        let files = init(
            dir.path(),
            &[],
            &["postgres".to_owned(), "db.internal".to_owned()],
        )
        .expect("init");
        let pem = std::fs::read(&files.postgres.0).expect("certificate");
        assert_eq!(dns_names(&pem), ["postgres", "db.internal"]);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&files.postgres.1)
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is readable by others: {mode:o}");
    }
}
