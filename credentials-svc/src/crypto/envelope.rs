//! The credential envelope, format 1: a fresh AES-256-GCM data key per seal, wrapped by a
//! key-encryption key, with both layers bound to the credential's row.
//!
//! Layout (integers big-endian):
//!
//! | bytes | field                                              |
//! |-------|----------------------------------------------------|
//! | 3     | magic `LRE`                                        |
//! | 1     | format version (`1`)                               |
//! | 2     | key id length `n`, 1 ..= 255                       |
//! | n     | key id of the KEK (printable ASCII)                |
//! | 2     | wrapped data key length `m`, 1 ..= 1024            |
//! | m     | wrapped data key (KEK-specific)                    |
//! | 12    | data nonce                                         |
//! | rest  | ciphertext ‖ 16-byte tag                           |
//!
//! AAD: every field is a `u32` length followed by its bytes, so no two contexts encode
//! alike. The wrap AAD is `"levelrail-credential" ‖ "wrap-data-key" ‖ version ‖ key id ‖
//! credential id ‖ provider`; the data AAD is `"levelrail-credential" ‖ "data" ‖ version ‖
//! credential id ‖ provider`. The data AAD deliberately leaves out the key id: [`rewrap`]
//! moves a row to a new KEK without touching its ciphertext, and the key id is still bound
//! because the data key, fresh per envelope, is only recoverable through the wrap whose AAD
//! names it.
use zeroize::Zeroizing;

use super::gcm::{self, NONCE_LEN, TAG_LEN};
use super::kek::{DataKey, KeyEncryptionKey, MAX_KEK_ID_LEN, is_valid_kek_id};
use super::{CryptoError, Keyring};

/// The envelope format this module writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// The first three bytes of every envelope.
pub const MAGIC: &[u8; 3] = b"LRE";
/// Longest wrapped data key an envelope can carry (reliability S6).
pub const MAX_WRAPPED_DEK_LEN: usize = 1024;
/// Longest credential id or provider name accepted in an [`AadContext`].
pub const MAX_CONTEXT_FIELD_LEN: usize = 255;
/// Largest plaintext [`seal`] accepts (credential documents are capped at 64 KiB upstream).
pub const MAX_PLAINTEXT_LEN: usize = 64 * 1024;
/// Largest envelope [`open`] parses; anything longer is rejected before any crypto.
pub const MAX_ENVELOPE_LEN: usize = FIXED_HEADER_LEN
    + MAX_KEK_ID_LEN
    + MAX_WRAPPED_DEK_LEN
    + NONCE_LEN
    + MAX_PLAINTEXT_LEN
    + TAG_LEN;

/// Magic, version and the two length prefixes.
const FIXED_HEADER_LEN: usize = 3 + 1 + 2 + 2;
const AAD_DOMAIN: &[u8] = b"levelrail-credential";
const LABEL_WRAP: &[u8] = b"wrap-data-key";
const LABEL_DATA: &[u8] = b"data";

/// The row an envelope belongs to. Both fields are bound into the AAD, so an envelope
/// copied to another credential id or provider fails to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AadContext<'a> {
    /// The credential's id (a UUID in the store).
    pub credential_id: &'a str,
    /// The provider's stable identifier (`hetzner`, `aws`, …).
    pub provider: &'a str,
}

/// Encrypts `plaintext` for the row `ctx` under a fresh data key wrapped by `kek`.
pub fn seal(
    kek: &dyn KeyEncryptionKey,
    ctx: &AadContext<'_>,
    plaintext: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    check_context(ctx)?;
    let kek_id = kek.id();
    if !is_valid_kek_id(kek_id) {
        return Err(CryptoError::Malformed(
            "key id is empty, too long or not printable ASCII",
        ));
    }
    if plaintext.len() > MAX_PLAINTEXT_LEN {
        return Err(CryptoError::Malformed(
            "plaintext larger than the size limit",
        ));
    }
    let dek = DataKey::generate();
    let wrapped = kek.wrap(&dek, &wrap_aad(kek_id, ctx)?)?;
    let nonce = gcm::random_nonce();
    let body = gcm::seal(dek.expose_secret(), &nonce, &data_aad(ctx)?, plaintext)?;
    assemble(kek_id, &wrapped, &nonce, &body)
}

/// Decrypts an envelope of the row `ctx` with the keyring's key named in the envelope.
/// Size limits and the format are checked before any key is touched (reliability S6).
pub fn open(
    keyring: &Keyring,
    ctx: &AadContext<'_>,
    envelope: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let parsed = parse(envelope)?;
    check_context(ctx)?;
    let dek = unwrap_dek(keyring, ctx, &parsed)?;
    gcm::open(
        dek.expose_secret(),
        parsed.nonce,
        &data_aad(ctx)?,
        parsed.body,
    )
}

/// Re-wraps the envelope's data key with `keyring.primary()`, keeping nonce and
/// ciphertext. Returns identical bytes when the envelope is already on the primary (after
/// checking that its data key unwraps for `ctx`). The ciphertext itself is not decrypted.
pub fn rewrap(
    keyring: &Keyring,
    ctx: &AadContext<'_>,
    envelope: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let parsed = parse(envelope)?;
    check_context(ctx)?;
    let dek = unwrap_dek(keyring, ctx, &parsed)?;
    let primary = keyring.primary();
    if primary.id() == parsed.kek_id {
        return Ok(envelope.to_vec());
    }
    let wrapped = primary.wrap(&dek, &wrap_aad(primary.id(), ctx)?)?;
    assemble(primary.id(), &wrapped, parsed.nonce, parsed.body)
}

/// The id of the key-encryption key an envelope is wrapped with (no crypto involved).
pub fn envelope_kek_id(envelope: &[u8]) -> Result<String, CryptoError> {
    parse(envelope).map(|p| p.kek_id.to_owned())
}

/// An envelope split into its fields; every length is already within its limit.
#[derive(Debug)]
struct Parsed<'a> {
    kek_id: &'a str,
    wrapped: &'a [u8],
    nonce: &'a [u8; NONCE_LEN],
    body: &'a [u8],
}

fn parse(envelope: &[u8]) -> Result<Parsed<'_>, CryptoError> {
    if envelope.len() > MAX_ENVELOPE_LEN {
        return Err(CryptoError::Malformed(
            "envelope larger than the size limit",
        ));
    }
    let mut rest = envelope;
    if take(&mut rest, MAGIC.len())? != MAGIC {
        return Err(CryptoError::Malformed("not a Levelrail envelope"));
    }
    if take(&mut rest, 1)? != [FORMAT_VERSION] {
        return Err(CryptoError::Malformed(
            "unsupported envelope format version",
        ));
    }
    let id_len = take_len(&mut rest, MAX_KEK_ID_LEN, "key id length out of range")?;
    let kek_id = std::str::from_utf8(take(&mut rest, id_len)?)
        .ok()
        .filter(|id| is_valid_kek_id(id))
        .ok_or(CryptoError::Malformed("key id is not printable ASCII"))?;
    let wrapped_len = take_len(
        &mut rest,
        MAX_WRAPPED_DEK_LEN,
        "wrapped data key length out of range",
    )?;
    let wrapped = take(&mut rest, wrapped_len)?;
    let nonce = take(&mut rest, NONCE_LEN)?
        .try_into()
        .map_err(|_| CryptoError::Malformed("envelope truncated"))?;
    if rest.len() < TAG_LEN {
        return Err(CryptoError::Malformed("ciphertext shorter than the tag"));
    }
    Ok(Parsed {
        kek_id,
        wrapped,
        nonce,
        body: rest,
    })
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], CryptoError> {
    let (head, tail) = rest
        .split_at_checked(n)
        .ok_or(CryptoError::Malformed("envelope truncated"))?;
    *rest = tail;
    Ok(head)
}

/// A `u16` length prefix that must lie in `1..=max`.
fn take_len(rest: &mut &[u8], max: usize, what: &'static str) -> Result<usize, CryptoError> {
    let bytes: [u8; 2] = take(rest, 2)?
        .try_into()
        .map_err(|_| CryptoError::Malformed("envelope truncated"))?;
    let len = usize::from(u16::from_be_bytes(bytes));
    if len == 0 || len > max {
        return Err(CryptoError::Malformed(what));
    }
    Ok(len)
}

fn assemble(
    kek_id: &str,
    wrapped: &[u8],
    nonce: &[u8; NONCE_LEN],
    body: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    if wrapped.is_empty() || wrapped.len() > MAX_WRAPPED_DEK_LEN {
        return Err(CryptoError::Malformed(
            "wrapped data key length out of range",
        ));
    }
    let id_len = u16::try_from(kek_id.len()).map_err(|_| CryptoError::Malformed("key id"))?;
    let wrapped_len =
        u16::try_from(wrapped.len()).map_err(|_| CryptoError::Malformed("wrapped data key"))?;
    let mut out = Vec::with_capacity(
        FIXED_HEADER_LEN + kek_id.len() + wrapped.len() + NONCE_LEN + body.len(),
    );
    out.extend_from_slice(MAGIC);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&id_len.to_be_bytes());
    out.extend_from_slice(kek_id.as_bytes());
    out.extend_from_slice(&wrapped_len.to_be_bytes());
    out.extend_from_slice(wrapped);
    out.extend_from_slice(nonce);
    out.extend_from_slice(body);
    Ok(out)
}

fn unwrap_dek(
    keyring: &Keyring,
    ctx: &AadContext<'_>,
    parsed: &Parsed<'_>,
) -> Result<DataKey, CryptoError> {
    let aad = wrap_aad(parsed.kek_id, ctx)?;
    // One key for every id but the legacy `env`, which any key from the environment may
    // have sealed: the first whose tag verifies opens it.
    let mut failure = CryptoError::UnknownKey(parsed.kek_id.into());
    for kek in keyring.openers(parsed.kek_id) {
        match kek.unwrap(parsed.wrapped, &aad) {
            Ok(dek) => return Ok(dek),
            Err(e) => failure = e,
        }
    }
    Err(failure)
}

fn check_context(ctx: &AadContext<'_>) -> Result<(), CryptoError> {
    let ok = |s: &str| (1..=MAX_CONTEXT_FIELD_LEN).contains(&s.len());
    if !ok(ctx.credential_id) {
        return Err(CryptoError::Malformed(
            "credential id empty or longer than 255 bytes",
        ));
    }
    if !ok(ctx.provider) {
        return Err(CryptoError::Malformed(
            "provider empty or longer than 255 bytes",
        ));
    }
    Ok(())
}

/// AAD of the key wrap: binds the key id as well as the row.
fn wrap_aad(kek_id: &str, ctx: &AadContext<'_>) -> Result<Vec<u8>, CryptoError> {
    encode_aad(&[
        AAD_DOMAIN,
        LABEL_WRAP,
        &[FORMAT_VERSION],
        kek_id.as_bytes(),
        ctx_id(ctx),
        ctx_p(ctx),
    ])
}

/// AAD of the data encryption: binds the row (see the module docs for the key id).
fn data_aad(ctx: &AadContext<'_>) -> Result<Vec<u8>, CryptoError> {
    encode_aad(&[
        AAD_DOMAIN,
        LABEL_DATA,
        &[FORMAT_VERSION],
        ctx_id(ctx),
        ctx_p(ctx),
    ])
}

fn ctx_id<'a>(ctx: &AadContext<'a>) -> &'a [u8] {
    ctx.credential_id.as_bytes()
}

fn ctx_p<'a>(ctx: &AadContext<'a>) -> &'a [u8] {
    ctx.provider.as_bytes()
}

fn encode_aad(fields: &[&[u8]]) -> Result<Vec<u8>, CryptoError> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| 4 + f.len()).sum());
    for field in fields {
        let len = u32::try_from(field.len()).map_err(|_| CryptoError::Malformed("AAD field"))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(field);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
