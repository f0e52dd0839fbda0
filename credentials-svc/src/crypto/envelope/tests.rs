//! Tests of the envelope format: round trips, row binding, tamper detection, size limits,
//! nonce/key freshness and re-wrapping.
use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::crypto::KeyState;
use crate::crypto::kek::test_support::{CountingKek, fixed_kek};

const ROW: AadContext<'static> = AadContext {
    credential_id: "0190f1c2-7d1e-7c4a-9a55-3f6f2a4b8e01",
    provider: "hetzner",
};
const CANARY: &str = "CANARY-5e1f9a7c3b2d";

fn ring_of(keys: Vec<(Arc<dyn KeyEncryptionKey>, KeyState)>) -> Keyring {
    Keyring::new(keys).expect("valid keyring")
}

fn single(id: &str) -> Keyring {
    ring_of(vec![(fixed_kek(id, 1), KeyState::Primary)])
}

/// About 1 KiB of plaintext full of canaries.
fn secret_document() -> Vec<u8> {
    let mut doc = format!("{{\"token\":\"{CANARY}\",\"pad\":\"");
    while doc.len() < 1000 {
        doc.push_str(CANARY);
    }
    doc.push_str("\"}");
    doc.into_bytes()
}

#[test]
fn a_sealed_credential_opens_to_its_plaintext() {
    // Arrange
    let ring = single("k1");
    // Act
    let env = seal(ring.primary().as_ref(), &ROW, b"hcloud-token").expect("seal");
    let empty = seal(ring.primary().as_ref(), &ROW, b"").expect("seal");
    // Assert
    assert_eq!(&open(&ring, &ROW, &env).expect("open")[..], b"hcloud-token");
    assert!(open(&ring, &ROW, &empty).expect("open").is_empty());
    assert_eq!(envelope_kek_id(&env).expect("id"), "k1");
}

#[test]
fn the_envelope_layout_is_pinned() {
    let ring = single("k1");
    let env = seal(ring.primary().as_ref(), &ROW, b"abc").expect("seal");
    // magic, version, id length, id, wrapped length (LocalKek: 12 + 32 + 16 = 60)
    assert_eq!(&env[..10], b"LRE\x01\x00\x02k1\x00\x3c");
    let p = parse(&env).expect("parse");
    assert_eq!(p.nonce.len(), 12);
    assert_eq!(p.wrapped.len(), 60);
    assert_eq!(p.body.len(), 3 + 16);
    assert_eq!(env.len(), 10 + 60 + 12 + 3 + 16);
}

#[test]
fn a_ciphertext_moved_to_another_row_fails_to_decrypt() {
    let ring = single("k1");
    let env = seal(ring.primary().as_ref(), &ROW, b"secret").expect("seal");
    let other_row = AadContext {
        credential_id: "0190f1c2-7d1e-7c4a-9a55-3f6f2a4b8e02",
        ..ROW
    };
    assert!(matches!(
        open(&ring, &other_row, &env),
        Err(CryptoError::Decrypt)
    ));
    assert!(matches!(
        rewrap(&ring, &other_row, &env),
        Err(CryptoError::Decrypt)
    ));
}

#[test]
fn a_ciphertext_moved_to_another_provider_fails_to_decrypt() {
    let ring = single("k1");
    let env = seal(ring.primary().as_ref(), &ROW, b"secret").expect("seal");
    let other_provider = AadContext {
        provider: "digitalocean",
        ..ROW
    };
    assert!(matches!(
        open(&ring, &other_provider, &env),
        Err(CryptoError::Decrypt)
    ));
}

#[test]
fn a_wrapped_data_key_spliced_into_another_envelope_of_the_same_row_fails() {
    let ring = single("k1");
    let a = seal(ring.primary().as_ref(), &ROW, b"first").expect("seal");
    let b = seal(ring.primary().as_ref(), &ROW, b"second").expect("seal");
    let (pa, pb) = (parse(&a).expect("a"), parse(&b).expect("b"));
    let spliced = assemble("k1", pa.wrapped, pb.nonce, pb.body).expect("assemble");
    assert!(matches!(
        open(&ring, &ROW, &spliced),
        Err(CryptoError::Decrypt)
    ));
}

#[test]
fn the_wrap_and_data_aad_are_domain_separated_and_unambiguous() {
    let wrap = wrap_aad("k1", &ROW).expect("aad");
    let data = data_aad(&ROW).expect("aad");
    assert_ne!(wrap, data);
    // Moving bytes between adjacent fields changes the encoding.
    let a = data_aad(&AadContext {
        credential_id: "ab",
        provider: "c",
    })
    .expect("aad");
    let b = data_aad(&AadContext {
        credential_id: "a",
        provider: "bc",
    })
    .expect("aad");
    assert_ne!(a, b);
    assert!(data.starts_with(b"\x00\x00\x00\x14levelrail-credential\x00\x00\x00\x04data"));
}

#[test]
fn every_single_bit_flip_of_a_sealed_envelope_fails_without_leaking_plaintext() {
    // Arrange
    let ring = single("k1");
    let plaintext = secret_document();
    let env = seal(ring.primary().as_ref(), &ROW, &plaintext).expect("seal");
    assert!(env.len() > 1024);
    // Act + Assert: all 8 × len single-bit mutations.
    let mut cases = 0;
    for byte in 0..env.len() {
        for bit in 0..8 {
            let mut tampered = env.clone();
            tampered[byte] ^= 1 << bit;
            match open(&ring, &ROW, &tampered) {
                Ok(_) => panic!("flip of bit {bit} in byte {byte} was accepted"),
                Err(e) => {
                    let text = format!("{e} {e:?}");
                    assert!(!text.contains(CANARY), "byte {byte} bit {bit}: {text}");
                }
            }
            cases += 1;
        }
    }
    assert_eq!(cases, env.len() * 8);
    assert_eq!(
        &open(&ring, &ROW, &env).expect("original still opens")[..],
        &plaintext[..]
    );
}

/// Patches the u16 length at `at` and inserts/removes bytes after it so the field has `len`.
fn with_field_len(env: &[u8], at: usize, old: usize, len: usize) -> Vec<u8> {
    let mut out = env[..at].to_vec();
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend(std::iter::repeat_n(b'x', len));
    out.extend_from_slice(&env[at + 2 + old..]);
    out
}

#[test]
fn oversize_kek_ids_are_rejected_at_the_limit_plus_one_before_any_crypto() {
    // Arrange: a 255-byte id is accepted everywhere; a 256-byte id nowhere.
    let at_limit = Arc::new(CountingKek::new(&"x".repeat(255)));
    let over = CountingKek::new(&"x".repeat(256));
    let ring = ring_of(vec![(at_limit.clone(), KeyState::Primary)]);
    // Act + Assert: seal
    assert!(matches!(
        seal(&over, &ROW, b"s"),
        Err(CryptoError::Malformed(_))
    ));
    assert_eq!(over.calls(), 0);
    let env = seal(at_limit.as_ref(), &ROW, b"s").expect("255 is within the limit");
    assert_eq!(&open(&ring, &ROW, &env).expect("open")[..], b"s");
    // Act + Assert: open of an envelope whose id field is 256 bytes
    let before = at_limit.calls();
    let long = with_field_len(&env, 4, 255, 256);
    assert!(matches!(
        open(&ring, &ROW, &long),
        Err(CryptoError::Malformed(_))
    ));
    assert!(matches!(
        envelope_kek_id(&long),
        Err(CryptoError::Malformed(_))
    ));
    assert_eq!(at_limit.calls(), before, "no crypto before the limit check");
}

#[test]
fn oversize_wrapped_data_keys_are_rejected_at_the_limit_plus_one_before_any_crypto() {
    let kek = Arc::new(CountingKek::new("k1"));
    let ring = ring_of(vec![(kek.clone(), KeyState::Primary)]);
    let env = seal(kek.as_ref(), &ROW, b"s").expect("seal");
    let wrapped_at = 4 + 2 + 2;
    for (len, reaches_kek) in [(1024, true), (1025, false), (0, false)] {
        let before = kek.unwraps.load(std::sync::atomic::Ordering::SeqCst);
        let patched = with_field_len(&env, wrapped_at, 60, len);
        let result = open(&ring, &ROW, &patched);
        let after = kek.unwraps.load(std::sync::atomic::Ordering::SeqCst);
        assert!(result.is_err(), "len {len}");
        assert_eq!(after - before, usize::from(reaches_kek), "len {len}");
        if !reaches_kek {
            assert!(
                matches!(result, Err(CryptoError::Malformed(_))),
                "len {len}"
            );
        }
    }
}

#[test]
fn oversize_inputs_and_envelopes_are_rejected_at_the_limit_plus_one() {
    let kek = CountingKek::new("k1");
    let ring = single("k1");
    let max_field = "f".repeat(MAX_CONTEXT_FIELD_LEN);
    let over_field = "f".repeat(MAX_CONTEXT_FIELD_LEN + 1);
    let rows_ok = [
        AadContext {
            credential_id: &max_field,
            ..ROW
        },
        AadContext {
            provider: &max_field,
            ..ROW
        },
    ];
    let rows_bad = [
        AadContext {
            credential_id: &over_field,
            ..ROW
        },
        AadContext {
            provider: &over_field,
            ..ROW
        },
        AadContext {
            credential_id: "",
            ..ROW
        },
    ];
    for row in rows_bad {
        assert!(matches!(
            seal(&kek, &row, b"s"),
            Err(CryptoError::Malformed(_))
        ));
    }
    assert_eq!(kek.calls(), 0);
    for row in rows_ok {
        let env = seal(ring.primary().as_ref(), &row, b"s").expect("at the limit");
        assert!(open(&ring, &row, &env).is_ok());
    }
    let big = vec![7u8; MAX_PLAINTEXT_LEN];
    let env = seal(ring.primary().as_ref(), &ROW, &big).expect("max plaintext");
    let mut pad = env.clone();
    pad.resize(MAX_ENVELOPE_LEN, 0);
    assert!(matches!(open(&ring, &ROW, &pad), Err(CryptoError::Decrypt)));
    pad.push(0);
    assert!(matches!(
        open(&ring, &ROW, &pad),
        Err(CryptoError::Malformed(_))
    ));
    let too_big = vec![7u8; MAX_PLAINTEXT_LEN + 1];
    assert!(matches!(
        seal(&kek, &ROW, &too_big),
        Err(CryptoError::Malformed(_))
    ));
    assert_eq!(kek.calls(), 0);
}

#[test]
fn truncated_or_foreign_envelopes_are_malformed() {
    let ring = single("k1");
    let env = seal(ring.primary().as_ref(), &ROW, b"s").expect("seal");
    for len in 0..env.len() - 1 {
        assert!(
            matches!(
                open(&ring, &ROW, &env[..len]),
                Err(CryptoError::Malformed(_))
            ),
            "{len}"
        );
    }
    let mut v2 = env.clone();
    v2[3] = 2;
    assert!(matches!(
        open(&ring, &ROW, &v2),
        Err(CryptoError::Malformed(_))
    ));
}

#[test]
fn a_thousand_seals_use_distinct_nonces_and_distinct_data_keys() {
    let ring = single("k1");
    let kek = ring.primary();
    let (mut nonces, mut deks, mut wrap_nonces) = (HashSet::new(), HashSet::new(), HashSet::new());
    for _ in 0..1000 {
        let env = seal(kek.as_ref(), &ROW, b"same plaintext").expect("seal");
        let p = parse(&env).expect("parse");
        assert_eq!(p.nonce.len(), 12, "nonce length is pinned to 96 bits");
        let dek = kek
            .unwrap(p.wrapped, &wrap_aad("k1", &ROW).expect("aad"))
            .expect("unwrap");
        assert!(nonces.insert(*p.nonce));
        assert!(deks.insert(*dek.expose_secret()));
        assert!(wrap_nonces.insert(p.wrapped[..12].to_vec()));
    }
}

#[test]
fn an_unknown_key_id_is_reported_as_unknown_key() {
    let env = seal(fixed_kek("k9", 9).as_ref(), &ROW, b"s").expect("seal");
    let err = open(&single("k1"), &ROW, &env).unwrap_err();
    assert!(matches!(err, CryptoError::UnknownKey(ref id) if id == "k9"));
}

#[test]
fn rewrap_moves_rows_to_the_new_primary_and_retiring_the_old_key_strands_only_stale_rows() {
    // Arrange: two rows sealed under k1.
    let (k1, k2) = (fixed_kek("k1", 1), fixed_kek("k2", 2));
    let before = ring_of(vec![(k1.clone(), KeyState::Primary)]);
    let row_b = AadContext {
        credential_id: "row-b",
        provider: "aws",
    };
    let a = seal(before.primary().as_ref(), &ROW, b"alpha").expect("seal");
    let b = seal(before.primary().as_ref(), &row_b, b"bravo").expect("seal");
    // Act 1: k2 promoted; the old key still opens both rows.
    let rotating = ring_of(vec![
        (k1.clone(), KeyState::Retiring),
        (k2.clone(), KeyState::Primary),
    ]);
    assert_eq!(
        &open(&rotating, &ROW, &a).expect("old key opens")[..],
        b"alpha"
    );
    let a2 = rewrap(&rotating, &ROW, &a).expect("rewrap");
    // Assert: only the key wrap changed.
    assert_eq!(envelope_kek_id(&a2).expect("id"), "k2");
    let (pa, pa2) = (parse(&a).expect("a"), parse(&a2).expect("a2"));
    assert_eq!((pa.nonce, pa.body), (pa2.nonce, pa2.body));
    assert_eq!(&open(&rotating, &ROW, &a2).expect("open")[..], b"alpha");
    assert_eq!(rewrap(&rotating, &ROW, &a2).expect("idempotent"), a2);
    // Act 2: k1 retired; b was never re-wrapped.
    let after = ring_of(vec![(k2, KeyState::Primary)]);
    assert_eq!(
        &open(&after, &ROW, &a2).expect("rewrapped row opens")[..],
        b"alpha"
    );
    let err = open(&after, &row_b, &b).unwrap_err();
    assert!(matches!(err, CryptoError::UnknownKey(ref id) if id == "k1"));
    assert!(matches!(
        rewrap(&after, &row_b, &b),
        Err(CryptoError::UnknownKey(_))
    ));
}
