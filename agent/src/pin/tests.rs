//! Unit tests of the pin verifier and of fingerprint parsing.

use rcgen::ExtendedKeyUsagePurpose;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use super::*;
use crate::test_pki::TestCa;

fn verify(
    verifier: &PinnedCaVerifier,
    leaf: &CertificateDer<'static>,
    chain: &[CertificateDer<'static>],
    host: &str,
) -> Result<(), rustls::Error> {
    let name = ServerName::try_from(host.to_owned()).unwrap();
    verifier
        .verify_server_cert(leaf, chain, &name, &[], UnixTime::now())
        .map(|_| ())
}

#[test]
fn a_chain_from_the_pinned_ca_is_accepted() {
    let ca = TestCa::new("pinned");
    let leaf = ca.server_leaf(&["localhost", "127.0.0.1"]);
    let verifier = PinnedCaVerifier::new(ca.fingerprint());
    verify(&verifier, &leaf, &[ca.der()], "localhost").unwrap();
    verify(&verifier, &leaf, &[ca.der()], "127.0.0.1").unwrap();
    assert!(!verifier.rejected());
}

#[test]
fn a_host_name_mismatch_is_tolerated_because_the_pin_names_the_control_plane() {
    let ca = TestCa::new("pinned");
    let leaf = ca.server_leaf(&["control-plane.internal"]);
    let verifier = PinnedCaVerifier::new(ca.fingerprint());
    verify(&verifier, &leaf, &[ca.der()], "10.1.2.3").unwrap();
}

#[test]
fn a_chain_from_another_ca_is_rejected_and_remembered() {
    let pinned = TestCa::new("pinned");
    let other = TestCa::new("attacker");
    let leaf = other.server_leaf(&["localhost"]);
    let verifier = PinnedCaVerifier::new(pinned.fingerprint());
    let err = verify(&verifier, &leaf, &[other.der()], "localhost").unwrap_err();
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::Other(_))
        ),
        "{err}"
    );
    assert!(verifier.rejected());
}

#[test]
fn presenting_the_pinned_ca_next_to_a_leaf_it_did_not_sign_is_rejected() {
    // The CA certificate is public: an attacker can send it along with their own leaf.
    let pinned = TestCa::new("pinned");
    let other = TestCa::new("attacker");
    let leaf = other.server_leaf(&["localhost"]);
    let verifier = PinnedCaVerifier::new(pinned.fingerprint());
    assert!(verify(&verifier, &leaf, &[pinned.der(), other.der()], "localhost").is_err());
    assert!(verifier.rejected());
}

#[test]
fn a_node_client_certificate_from_the_pinned_ca_is_not_a_server_certificate() {
    let ca = TestCa::new("pinned");
    let client = ca.leaf(&["node-1"], ExtendedKeyUsagePurpose::ClientAuth, None);
    let verifier = PinnedCaVerifier::new(ca.fingerprint());
    assert!(verify(&verifier, &client, &[ca.der()], "node-1").is_err());
}

#[test]
fn an_expired_server_certificate_is_rejected() {
    let ca = TestCa::new("pinned");
    let leaf = ca.leaf(
        &["localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
        Some(()),
    );
    let verifier = PinnedCaVerifier::new(ca.fingerprint());
    assert!(verify(&verifier, &leaf, &[ca.der()], "localhost").is_err());
}

#[test]
fn the_stored_ca_is_an_anchor_when_the_server_sends_only_its_leaf() {
    let ca = TestCa::new("pinned");
    let leaf = ca.server_leaf(&["localhost"]);
    let bare = PinnedCaVerifier::new(ca.fingerprint());
    assert!(verify(&bare, &leaf, &[], "localhost").is_err());
    let with_ca = PinnedCaVerifier::new(ca.fingerprint()).with_known_ca(ca.der());
    verify(&with_ca, &leaf, &[], "localhost").unwrap();
}

#[test]
fn a_stored_ca_that_does_not_hash_to_the_pin_is_ignored() {
    let pinned = TestCa::new("pinned");
    let other = TestCa::new("attacker");
    let leaf = other.server_leaf(&["localhost"]);
    let verifier = PinnedCaVerifier::new(pinned.fingerprint()).with_known_ca(other.der());
    assert!(verify(&verifier, &leaf, &[], "localhost").is_err());
}

#[test]
fn fingerprints_parse_strictly_from_tokens_and_leniently_from_operators() {
    let ca = TestCa::new("pinned");
    let fp = ca.fingerprint();
    let hex = fp.to_string();
    assert_eq!(hex.len(), 64);
    assert_eq!(Fingerprint::parse_strict(&hex), Some(fp));
    assert_eq!(Fingerprint::parse_strict(&hex.to_uppercase()), None);
    assert_eq!(Fingerprint::parse_strict(&hex[..62]), None);
    assert_eq!(
        Fingerprint::parse_strict(&format!("{}zz", &hex[..62])),
        None
    );

    let colons = hex
        .to_uppercase()
        .as_bytes()
        .chunks(2)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(":");
    assert_eq!(Fingerprint::parse_lenient(&colons), Some(fp));
    assert_eq!(
        Fingerprint::parse_lenient(&format!("sha256:{hex}")),
        Some(fp)
    );
    assert_eq!(Fingerprint::parse_lenient(&format!(" {hex} ")), Some(fp));
    assert_eq!(Fingerprint::parse_lenient("abcd"), None);
    assert!(fp.matches(&ca.der()));
}
