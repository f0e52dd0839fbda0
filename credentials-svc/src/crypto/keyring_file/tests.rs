//! Tests of the keyring file: creation mode, reloads, refusals and the resumable rotation.
use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::crypto::{AadContext, envelope_kek_id, open, rewrap, seal};

const ROW: AadContext<'static> = AadContext {
    credential_id: "cred-1",
    provider: "gcp",
};

fn temp() -> (tempfile::TempDir, KeyringFile) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = KeyringFile::new(dir.path().join("keyring.json"));
    (dir, file)
}

fn mode(file: &KeyringFile) -> u32 {
    fs::metadata(file.path())
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

fn json(file: &KeyringFile) -> serde_json::Value {
    serde_json::from_slice(&fs::read(file.path()).expect("read")).expect("json")
}

fn write_raw(file: &KeyringFile, text: &str) {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file.path())
        .expect("open");
    f.write_all(text.as_bytes()).expect("write");
}

fn states(ring: &Keyring) -> Vec<(String, KeyState)> {
    ring.key_ids()
        .into_iter()
        .map(|id| {
            let s = ring.state_of(&id);
            (id, s.expect("state"))
        })
        .collect()
}

#[test]
fn a_new_keyring_file_is_created_with_mode_0600_and_one_primary_key() {
    // Arrange
    let (_dir, file) = temp();
    // Act
    let (ring, created) = file.load_or_create().expect("create");
    // Assert
    assert!(created);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(states(&ring), [("k1".to_owned(), KeyState::Primary)]);
    let v = json(&file);
    assert_eq!(v["format"], 1);
    assert_eq!(v["keys"][0]["id"], "k1");
    assert_eq!(v["keys"][0]["state"], "primary");
    let key = v["keys"][0]["key"].as_str().expect("key");
    assert_eq!(STANDARD.decode(key).expect("base64").len(), 32);
    let created_at = v["keys"][0]["created_at"].as_str().expect("created_at");
    assert!(OffsetDateTime::parse(created_at, &Rfc3339).is_ok());
}

#[test]
fn reloading_the_file_gives_the_same_keys() {
    let (_dir, file) = temp();
    let (first, _) = file.load_or_create().expect("create");
    let env = seal(first.primary().as_ref(), &ROW, b"secret").expect("seal");
    let (again, created) = file.load_or_create().expect("reload");
    assert!(!created);
    assert_eq!(&open(&again, &ROW, &env).expect("open")[..], b"secret");
    assert_eq!(
        &open(&file.load().expect("load"), &ROW, &env).expect("open")[..],
        b"secret"
    );
}

#[test]
fn a_group_or_world_readable_file_is_refused() {
    let (_dir, file) = temp();
    file.load_or_create().expect("create");
    let key = json(&file)["keys"][0]["key"]
        .as_str()
        .expect("key")
        .to_owned();
    for bad in [0o644, 0o640, 0o604, 0o620] {
        fs::set_permissions(file.path(), fs::Permissions::from_mode(bad)).expect("chmod");
        let err = file.load().unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(matches!(err, CryptoError::Keyring(_)), "{bad:o}");
        assert!(text.contains("chmod 600") && !text.contains(&key), "{text}");
        assert!(file.load_or_create().is_err(), "never replaced: {bad:o}");
    }
}

#[test]
fn malformed_keyring_files_are_refused_without_quoting_key_material() {
    let (_dir, file) = temp();
    let key = STANDARD.encode([0x5a; 32]);
    let entry = |id: &str, state: &str| {
        format!(
            r#"{{"id":"{id}","state":"{state}","key":"{key}","created_at":"2026-01-01T00:00:00Z"}}"#
        )
    };
    let cases = [
        r#"{"format":1,"keys":[]}"#.to_owned(),
        format!(r#"{{"format":1,"keys":[{}]}}"#, entry("k1", "active")),
        format!(
            r#"{{"format":1,"keys":[{},{}]}}"#,
            entry("k1", "primary"),
            entry("k2", "primary")
        ),
        format!(
            r#"{{"format":1,"keys":[{},{}]}}"#,
            entry("k1", "primary"),
            entry("k1", "active")
        ),
        format!(r#"{{"format":2,"keys":[{}]}}"#, entry("k1", "primary")),
        format!(r#"{{"format":1,"keys":[{}]}}"#, entry("k1", &key)),
        format!(r#"{{"format":1,"keys":[{}]}}"#, entry(&key, "primary")),
        format!(r#"{{"format":1,"keys":[{}]}}"#, entry("k01", "primary")),
        format!(r#"{{"format":1,"keys":[{}]}}"#, entry("env", "primary")),
        format!(
            r#"{{"format":1,"keys":[{}],"extra":"{key}"}}"#,
            entry("k1", "primary")
        ),
        format!(
            r#"{{"format":1,"keys":[{{"id":"k1","state":"primary","key":"{}","created_at":"2026-01-01T00:00:00Z"}}]}}"#,
            STANDARD.encode([0x5a; 31])
        ),
        format!(
            r#"{{"format":1,"keys":[{{"id":"k1","state":"primary","key":"{key}","created_at":"yesterday"}}]}}"#
        ),
        format!(r#"{{"format":1,"keys":[{}"#, entry("k1", "primary")),
        format!(r#"{{"format":"{key}","keys":[]}}"#),
    ];
    for (i, text) in cases.iter().enumerate() {
        write_raw(&file, text);
        let err = file.load().unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, CryptoError::Keyring(_)), "case {i}: {shown}");
        assert!(
            !shown.contains(&key[..12]),
            "case {i} quotes key material: {shown}"
        );
        assert!(
            file.load_or_create().is_err(),
            "case {i} must not be replaced"
        );
    }
}

#[test]
fn add_promote_and_retire_are_persisted_across_reloads() {
    use KeyState::*;
    let (_dir, file) = temp();
    file.load_or_create().expect("create");

    assert_eq!(file.add_key().expect("add"), "k2");
    let ring = KeyringFile::new(file.path()).load().expect("reload");
    assert_eq!(
        states(&ring),
        [("k1".into(), Primary), ("k2".into(), Active)]
    );

    file.promote("k2").expect("promote");
    let ring = KeyringFile::new(file.path()).load().expect("reload");
    assert_eq!(
        states(&ring),
        [("k1".into(), Retiring), ("k2".into(), Primary)]
    );
    assert_eq!(mode(&file), 0o600);

    file.retire("k1").expect("retire");
    let ring = KeyringFile::new(file.path()).load().expect("reload");
    assert_eq!(states(&ring), [("k2".into(), Primary)]);
    assert_eq!(json(&file)["retired"][0], "k1");
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn every_rotation_step_is_idempotent_and_refuses_unsafe_removals() {
    let (_dir, file) = temp();
    file.load_or_create().expect("create");
    let k2 = file.add_key().expect("add");
    assert!(
        matches!(file.retire("k1"), Err(CryptoError::Keyring(_))),
        "primary"
    );
    assert!(
        matches!(file.retire(&k2), Err(CryptoError::Keyring(_))),
        "active"
    );
    assert!(
        matches!(file.promote("k9"), Err(CryptoError::Keyring(_))),
        "unknown"
    );
    file.promote(&k2).expect("promote");
    file.promote(&k2).expect("promote again is a no-op");
    file.retire("k1").expect("retire");
    file.retire("k1").expect("retire again is a no-op");
    assert_eq!(file.load().expect("load").key_ids(), [k2]);
}

#[test]
fn retired_key_ids_are_never_reused() {
    let (_dir, file) = temp();
    file.load_or_create().expect("create");
    let k2 = file.add_key().expect("add");
    file.promote(&k2).expect("promote k2");
    file.promote("k1").expect("roll back to k1");
    file.retire(&k2).expect("retire k2");
    assert_eq!(file.add_key().expect("add"), "k3");
}

#[test]
fn a_rotation_interrupted_after_promote_resumes_from_the_file() {
    // Arrange: rows sealed under k1; a rotation adds and promotes k2, then "crashes".
    let (_dir, file) = temp();
    let (ring, _) = file.load_or_create().expect("create");
    let rows = [
        AadContext {
            credential_id: "a",
            provider: "aws",
        },
        AadContext {
            credential_id: "b",
            provider: "gcp",
        },
    ];
    let sealed: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| seal(ring.primary().as_ref(), r, r.credential_id.as_bytes()).expect("seal"))
        .collect();
    let k2 = file.add_key().expect("add");
    file.promote(&k2).expect("promote");
    drop(ring);
    // Act: a new process reloads and resumes: re-wraps row a, is interrupted, re-wraps b.
    let resumed = KeyringFile::new(file.path()).load().expect("reload");
    assert!(resumed.has_pending_rotation());
    assert_eq!(resumed.retiring_ids(), ["k1"]);
    for (row, env) in rows.iter().zip(&sealed) {
        assert!(
            open(&resumed, row, env).is_ok(),
            "every row opens mid-rotation"
        );
    }
    let a2 = rewrap(&resumed, &rows[0], &sealed[0]).expect("rewrap");
    // Assert: after retiring k1 the re-wrapped row opens and the stale one is stranded.
    let resumed = file.load().expect("reload");
    let b2 = rewrap(&resumed, &rows[1], &sealed[1]).expect("rewrap");
    let stale = sealed[1].clone();
    file.retire("k1").expect("retire");
    let done = file.load().expect("reload");
    assert!(!done.has_pending_rotation());
    assert_eq!(envelope_kek_id(&a2).expect("id"), k2);
    assert_eq!(&open(&done, &rows[0], &a2).expect("open")[..], b"a");
    assert_eq!(&open(&done, &rows[1], &b2).expect("open")[..], b"b");
    assert!(
        matches!(open(&done, &rows[1], &stale), Err(CryptoError::UnknownKey(id)) if id == "k1")
    );
}

#[test]
fn concurrent_writers_do_not_lose_keys_or_leave_temp_files() {
    let (dir, file) = temp();
    file.load_or_create().expect("create");
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| file.add_key().expect("add")))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 6);
    assert_eq!(file.load().expect("load").key_ids().len(), 7);
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".keyring.json.lock", "keyring.json"]);
}

#[test]
fn loading_a_missing_file_fails_and_creation_never_overwrites() {
    let (_dir, file) = temp();
    assert!(matches!(file.load(), Err(CryptoError::Keyring(m)) if m.contains("does not exist")));
    let (first, _) = file.load_or_create().expect("create");
    let env = seal(first.primary().as_ref(), &ROW, b"x").expect("seal");
    assert!(!file.create(b"{}").expect("create again"));
    assert!(open(&file.load().expect("load"), &ROW, &env).is_ok());
}

#[test]
fn debug_output_of_a_loaded_keyring_shows_ids_only() {
    let (_dir, file) = temp();
    let (ring, _) = file.load_or_create().expect("create");
    let key = json(&file)["keys"][0]["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let text = format!("{ring:?} {file:?} {:?}", ring.primary());
    assert!(text.contains("k1") && !text.contains(&key[..12]), "{text}");
}
