//! https API URLs: `--ca-cert` trusts the control plane's own CA; without it only the public
//! web PKI roots are trusted, so a private CA is refused with a one-line reason.
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tonic::transport::Identity;

use crate::helpers::{FakeSecrets, TestServer};

/// A private CA (PEM) and a `localhost` server identity it signed.
fn private_ca() -> (String, Identity) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().expect("server key");
    let server_params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let server_cert = server_params
        .signed_by(&server_key, &issuer)
        .expect("server cert");
    (
        ca_cert.pem(),
        Identity::from_pem(server_cert.pem(), server_key.serialize_pem()),
    )
}

#[tokio::test]
async fn an_https_control_plane_is_trusted_through_ca_cert() {
    // Arrange
    let (ca_pem, identity) = private_ca();
    let server = TestServer::start_tls(identity).await;
    let ca_file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(ca_file.path(), ca_pem).expect("write CA");
    let ca_path = ca_file.path().to_str().expect("utf-8 path");

    // Act
    let out = server
        .run(
            &["--ca-cert", ca_path, "nodes", "providers", "list"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("PROVIDER"), "{}", out.stdout);
}

#[tokio::test]
async fn a_private_ca_without_ca_cert_is_refused_with_a_short_reason() {
    // Arrange
    let (_, identity) = private_ca();
    let server = TestServer::start_tls(identity).await;

    // Act
    let out = server
        .run(&["nodes", "providers", "list"], FakeSecrets::none())
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    let prefix = format!("error: cannot reach the control plane at {}: ", server.url);
    assert!(out.stderr.starts_with(&prefix), "{}", out.stderr);
    assert!(out.stderr.contains("certificate"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}
