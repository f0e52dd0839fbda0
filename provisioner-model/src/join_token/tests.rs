//! Tests of join-token minting, parsing, hashing and redaction.
use secrecy::ExposeSecret as _;

use super::*;

fn fingerprint() -> String {
    "0f".repeat(32)
}

#[test]
fn a_minted_token_has_the_documented_shape() {
    let minted = MintedJoinToken::mint(&fingerprint());
    let token = minted.token.expose_secret();
    let parts: Vec<&str> = token.split('.').collect();

    assert_eq!(parts.len(), 4, "{}", parts.len());
    assert_eq!(parts[0], "LR1");
    assert_eq!(parts[1], fingerprint());
    assert_eq!(parts[2], minted.id.as_str());
    assert!(minted.id.as_str().starts_with("njt_") && minted.id.as_str().len() == 20);
    assert_eq!(parts[3].len(), 43, "32 bytes of unpadded base64");
    assert!(
        parts[3]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
}

#[test]
fn a_minted_token_parses_back_to_its_id_pin_and_hash() {
    let minted = MintedJoinToken::mint(&fingerprint());

    let parsed = ParsedJoinToken::parse(minted.token.expose_secret()).expect("parses");

    assert_eq!(parsed.id, minted.id);
    assert_eq!(parsed.fingerprint, fingerprint());
    assert!(parsed.pins(&fingerprint()));
    assert!(parsed.pins(&fingerprint().to_uppercase()));
    assert!(!parsed.pins(&"00".repeat(32)));
    assert!(secret_hash_matches(
        &minted.secret_sha256,
        parsed.secret_sha256()
    ));
}

#[test]
fn two_minted_tokens_differ_in_id_and_secret() {
    let a = MintedJoinToken::mint(&fingerprint());
    let b = MintedJoinToken::mint(&fingerprint());
    assert_ne!(a.id, b.id);
    assert_ne!(a.secret_sha256, b.secret_sha256);
}

#[test]
fn the_stored_hash_is_sha256_of_the_secret_bytes() {
    let minted = MintedJoinToken::mint(&fingerprint());
    let secret = minted
        .token
        .expose_secret()
        .rsplit('.')
        .next()
        .expect("secret")
        .to_owned();
    let bytes = URL_SAFE_NO_PAD.decode(secret).expect("base64url");
    assert_eq!(bytes.len(), 32);
    let expected: [u8; 32] = Sha256::digest(&bytes).into();
    assert_eq!(minted.secret_sha256, expected);
}

#[test]
fn surrounding_whitespace_is_ignored() {
    let minted = MintedJoinToken::mint(&fingerprint());
    let padded = format!("  {}\n", minted.token.expose_secret());
    assert_eq!(
        ParsedJoinToken::parse(&padded).expect("parses").id,
        minted.id
    );
}

#[test]
fn malformed_tokens_are_rejected_without_echoing_them() {
    let good = MintedJoinToken::mint(&fingerprint());
    let good = good.token.expose_secret();
    let secret = good.rsplit('.').next().expect("secret");
    let id = JoinTokenId::generate();
    let fp = fingerprint();
    let cases = [
        String::new(),
        "LR1".into(),
        good.replacen("LR1", "LR2", 1),
        format!("{good}.extra"),
        format!("LR1.{}.{id}.{secret}", "0f".repeat(31)),
        format!("LR1.{}.{id}.{secret}", "zz".repeat(32)),
        format!("LR1.{fp}.njt_XYZ.{secret}"),
        format!("LR1.{fp}.{id}.{}", &secret[..42]),
        format!("LR1.{fp}.{id}.{}=", &secret[..42]),
        format!("LR1.{fp}.{id}.{}", "!".repeat(43)),
        format!("LR1.{fp}.{id}.{secret}{secret}"),
    ];
    for case in cases {
        let err = ParsedJoinToken::parse(&case).expect_err(&case);
        assert_eq!(err.field, "join_token");
        assert!(!err.to_string().contains(secret), "{err}");
        assert!(!err.to_string().contains(id.as_str()), "{err}");
    }
}

#[test]
fn token_ids_parse_strictly() {
    let id = JoinTokenId::generate();
    assert_eq!(JoinTokenId::parse(id.as_str()).expect("parses"), id);
    for bad in [
        "",
        "njt_",
        "njt_0123456789ABCDEF",
        "njt_0123456789abcde",
        "node_0123456789abcdef",
    ] {
        assert_eq!(JoinTokenId::parse(bad).expect_err(bad).field, "token_id");
    }
}

#[test]
fn debug_and_display_of_every_token_type_show_no_secret() {
    let minted = MintedJoinToken::mint(&fingerprint());
    let token = minted.token.expose_secret().to_owned();
    let secret = token.rsplit('.').next().expect("secret").to_owned();
    let parsed = ParsedJoinToken::parse(&token).expect("parses");
    let record = crate::JoinTokenRecord {
        id: minted.id.clone(),
        secret_sha256: minted.secret_sha256,
        node_name: None,
        provision_id: None,
        role: crate::Role::General,
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        expires_at: time::OffsetDateTime::UNIX_EPOCH,
        used_at: None,
        used_by_node: None,
        revoked_at: None,
    };
    let renderings = [
        format!("{minted:?}"),
        format!("{minted:#?}"),
        format!("{minted}"),
        format!("{parsed:?}"),
        format!("{parsed:#?}"),
        format!("{parsed}"),
        format!("{:?}", parsed.secret),
        format!("{:?}", minted.token),
        format!("{record:?}"),
        format!("{:?}", minted.id),
        format!("{}", minted.id),
    ];
    let hash_hex = hex::encode(minted.secret_sha256);
    for text in renderings {
        assert!(!text.contains(&secret), "secret shown in {text}");
        assert!(!text.contains(&hash_hex), "hash shown in {text}");
        assert!(
            !text.contains(&format!("{:?}", minted.secret_sha256)),
            "hash shown in {text}"
        );
    }
}
