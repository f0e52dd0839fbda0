//! Unit tests of the identity file: validation, 0600 atomic writes and reuse.

use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::test_pki::TestCa;

fn identity(ca: &TestCa) -> Identity {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = ca.client_cert_pem(&key, "node_1");
    Identity::new(
        "node_1".into(),
        "web-1".into(),
        &ControlPlaneAddr::parse("127.0.0.1:7443").unwrap(),
        ca.fingerprint(),
        cert,
        SecretString::from(key.serialize_pem()),
        ca.pem(),
        5,
    )
    .unwrap()
}

#[test]
fn the_identity_is_written_0600_in_a_0700_directory_and_read_back() {
    let ca = TestCa::new("ca");
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("data/sub/identity.json");
    let original = identity(&ca);
    original.save(&path).unwrap();

    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "temporary files left behind");

    let loaded = Identity::load(&path).unwrap().unwrap();
    assert_eq!(loaded.node_id, "node_1");
    assert_eq!(loaded.pin(), Some(ca.fingerprint()));
    assert_eq!(loaded.heartbeat_interval(), Duration::from_secs(5));
    loaded.client_auth().unwrap();
}

#[test]
fn saving_again_replaces_the_file_atomically() {
    let ca = TestCa::new("ca");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("identity.json");
    identity(&ca).save(&path).unwrap();
    let mut second = identity(&ca);
    second.node_id = "node_2".into();
    second.save(&path).unwrap();
    assert_eq!(Identity::load(&path).unwrap().unwrap().node_id, "node_2");
}

#[test]
fn a_missing_identity_is_none_and_a_corrupt_one_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("identity.json");
    assert!(Identity::load(&path).unwrap().is_none());
    fs::write(&path, "{not json").unwrap();
    let err = Identity::load(&path).unwrap_err();
    assert_eq!(err.exit_code().code(), 2);
    assert!(err.to_string().contains("APP_AGENT_IDENTITY_FILE"), "{err}");
}

#[test]
fn an_identity_whose_ca_does_not_match_its_pin_is_refused() {
    let ca = TestCa::new("ca");
    let other = TestCa::new("other");
    let mut id = identity(&ca);
    id.ca_pem = other.pem();
    assert!(id.validate().unwrap_err().contains("ca_fingerprint"));
}

#[test]
fn an_identity_whose_certificate_is_for_another_key_is_refused() {
    let ca = TestCa::new("ca");
    let mut id = identity(&ca);
    let stranger = rcgen::KeyPair::generate().unwrap();
    id.certificate_pem = ca.client_cert_pem(&stranger, "node_1");
    assert!(id.validate().unwrap_err().contains("key_pem"));
}

#[test]
fn a_world_readable_identity_is_tightened_to_0600_on_load() {
    let ca = TestCa::new("ca");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("identity.json");
    identity(&ca).save(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    Identity::load(&path).unwrap().unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn debug_output_never_shows_the_private_key() {
    let ca = TestCa::new("ca");
    let id = identity(&ca);
    let debug = format!("{id:?}");
    assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    assert!(debug.contains("node_1"));
    let json = serde_json::to_string(&id).unwrap();
    assert!(
        json.contains("PRIVATE KEY"),
        "the file itself must keep the key"
    );
}
