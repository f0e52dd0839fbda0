//! Target `join_token`: the join token a node presents to Enroll (`ParsedJoinToken::parse`)
//! and the token id an operator types (`JoinTokenId::parse`).
//!
//! Bytes: the token text.
//!
//! Properties: no panic; an accepted token is exactly its parts again (the fingerprint
//! lowercased), its hash is the SHA-256 of its decoded secret, it pins its own fingerprint
//! and no other, and neither `Debug` nor `Display` shows the secret; an error repeats no
//! part of the input; an accepted id is the input; a token minted for a well-formed
//! fingerprint parses back to the same id and hash.
use levelrail_provisioner_model::{JoinTokenId, MintedJoinToken, ParsedJoinToken};
use secrecy::ExposeSecret as _;
use sha2::{Digest as _, Sha256};

use crate::opaque::{assert_hides, assert_no_echo};

/// Whether the text is a join token or a token id.
pub fn accepts(data: &[u8]) -> bool {
    std::str::from_utf8(data)
        .is_ok_and(|t| ParsedJoinToken::parse(t).is_ok() || JoinTokenId::parse(t).is_ok())
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ParsedJoinToken::parse(text) {
        Ok(token) => accepted(text, &token),
        Err(_) => {
            let mut values: Vec<String> = text.split('.').map(str::to_owned).collect();
            values.push(text.to_owned());
            assert_no_echo(&[text.to_owned()], &values, "a join-token error", |f| {
                ParsedJoinToken::parse(&f[0]).err().map(|e| e.to_string())
            });
        }
    }
    if let Ok(id) = JoinTokenId::parse(text) {
        assert_eq!(id.as_str(), text, "an id is kept as given");
    }
    let fingerprint = text.trim();
    if fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()) {
        let fingerprint = fingerprint.to_ascii_lowercase();
        let minted = MintedJoinToken::mint(&fingerprint);
        let parsed =
            ParsedJoinToken::parse(minted.token.expose_secret()).expect("a minted token parses");
        assert_eq!(parsed.id, minted.id);
        assert_eq!(parsed.secret_sha256(), &minted.secret_sha256);
        assert!(parsed.pins(&fingerprint));
    }
}

fn accepted(text: &str, token: &ParsedJoinToken) {
    let parts: Vec<&str> = text.trim().split('.').collect();
    assert_eq!(parts.len(), 4, "an accepted token has four parts");
    assert_eq!(parts[0], "LR1");
    assert_eq!(parts[1].to_ascii_lowercase(), token.fingerprint);
    assert_eq!(parts[2], token.id.as_str());
    assert_eq!(parts[3], token.expose_secret());
    assert_eq!(token.secret.expose_secret(), token.expose_secret());
    let decoded = decode_base64url(parts[3]).expect("an accepted secret is base64url");
    let digest: [u8; 32] = Sha256::digest(&decoded).into();
    assert_eq!(
        token.secret_sha256(),
        &digest,
        "the hash is of the decoded secret"
    );
    assert!(token.pins(&token.fingerprint));
    assert!(token.pins(&token.fingerprint.to_ascii_uppercase()));
    let other = if token.fingerprint.starts_with('0') {
        "1"
    } else {
        "0"
    };
    assert!(!token.pins(&format!("{other}{}", &token.fingerprint[1..])));
    let secret = [parts[3]];
    assert_hides(&format!("{token:?}"), &secret, "Debug of a join token");
    assert_hides(&token.to_string(), &secret, "Display of a join token");
}

/// Unpadded base64url, decoded independently of the parser's own decoder.
fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0u32);
    for &c in text.as_bytes() {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero and fewer than a byte's worth of characters.
    (bits < 6 && acc == 0).then_some(out)
}
