//! The join token: `LR1.<ca fingerprint>.<token id>.<secret>`.
//!
//! The whole string is a secret: it lives in a `SecretString`, its `Debug` shows only the
//! token id and the fingerprint, and it is exposed once, to build the `Enroll` request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::{ExposeSecret as _, SecretString};

use crate::exit::AgentError;
use crate::pin::Fingerprint;

const PREFIX: &str = "LR1";

/// A parsed join token.
pub struct JoinToken {
    raw: SecretString,
    token_id: String,
    fingerprint: Fingerprint,
}

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinToken")
            .field("token_id", &self.token_id)
            .field("fingerprint", &self.fingerprint)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl JoinToken {
    /// Parses a token string (surrounding whitespace is ignored). Errors never echo it.
    pub fn parse(token: &str) -> Result<Self, AgentError> {
        let token = token.trim();
        let mut parts = token.split('.');
        let (Some(prefix), Some(fp), Some(id), Some(secret), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(AgentError::TokenMalformed(
                "expected LR1.<ca fingerprint>.<id>.<secret>",
            ));
        };
        if prefix != PREFIX {
            return Err(AgentError::TokenMalformed("it does not start with LR1."));
        }
        let fingerprint = Fingerprint::parse_strict(fp).ok_or(AgentError::TokenMalformed(
            "the CA fingerprint is not 64 lowercase hex digits",
        ))?;
        if !is_token_id(id) {
            return Err(AgentError::TokenMalformed("the token id is not njt_…"));
        }
        let secret_ok = URL_SAFE_NO_PAD
            .decode(secret.trim_end_matches('='))
            .is_ok_and(|bytes| !bytes.is_empty());
        if !secret_ok {
            return Err(AgentError::TokenMalformed("the secret is not base64url"));
        }
        Ok(Self {
            raw: SecretString::from(token),
            token_id: id.to_owned(),
            fingerprint,
        })
    }

    /// The token id (`njt_…`): safe to log and print.
    pub fn token_id(&self) -> &str {
        &self.token_id
    }

    /// The CA fingerprint the token carries.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The whole token string, for the `Enroll` request only.
    pub(crate) fn expose(&self) -> &str {
        self.raw.expose_secret()
    }

    /// `text` with any copy of this token, or of its secret part, replaced by `<redacted>`:
    /// applied to messages from the control plane before they are printed.
    pub(crate) fn redact(&self, text: &str) -> String {
        let raw = self.expose();
        let secret = raw.rsplit('.').next().unwrap_or(raw);
        text.replace(raw, "<redacted>")
            .replace(secret, "<redacted>")
    }
}

fn is_token_id(id: &str) -> bool {
    id.strip_prefix("njt_").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn token(id: &str, secret: &str) -> String {
        format!("LR1.{FP}.{id}.{secret}")
    }

    #[test]
    fn a_well_formed_token_yields_its_id_and_fingerprint() {
        let t =
            JoinToken::parse(&format!("  {}\n", token("njt_01HX", "c2VjcmV0LXNlY3JldA"))).unwrap();
        assert_eq!(t.token_id(), "njt_01HX");
        assert_eq!(t.fingerprint().to_string(), FP);
        assert_eq!(t.expose(), token("njt_01HX", "c2VjcmV0LXNlY3JldA"));
    }

    #[test]
    fn malformed_tokens_are_rejected_with_code_7_without_echoing_them() {
        let bad = [
            String::new(),
            "c2VjcmV0".to_owned(),
            format!("LR2.{FP}.njt_a.c2VjcmV0"),
            format!("LR1.{}.njt_a.c2VjcmV0", FP.to_uppercase()),
            format!("LR1.{}.njt_a.c2VjcmV0", &FP[..60]),
            token("tok_a", "c2VjcmV0"),
            token("njt_", "c2VjcmV0"),
            token("njt_a", ""),
            token("njt_a", "not*base64"),
            format!("{}.extra", token("njt_a", "c2VjcmV0")),
        ];
        for raw in bad {
            let err = JoinToken::parse(&raw).expect_err(&raw);
            assert_eq!(err.exit_code().code(), 7, "{raw}");
            if !raw.is_empty() {
                assert!(!err.to_string().contains("c2VjcmV0"), "{err}");
            }
        }
    }

    #[test]
    fn debug_and_redact_never_show_the_secret() {
        let raw = token("njt_a", "c3VwZXJzZWNyZXQ");
        let t = JoinToken::parse(&raw).unwrap();
        let debug = format!("{t:?}");
        assert!(
            debug.contains("njt_a") && !debug.contains("c3VwZXJzZWNyZXQ"),
            "{debug}"
        );
        let msg = format!("bad token {raw} (secret c3VwZXJzZWNyZXQ)");
        let red = t.redact(&msg);
        assert!(!red.contains("c3VwZXJzZWNyZXQ"), "{red}");
    }
}
