//! What an operator pastes to connect a cloud: its shape, and for a bearer token the rule it
//! must meet and the words the CLI and the web form show. The credentials service checks a
//! token against the same rule, so a new token cloud is described here, once, next to its
//! variant.

/// The shape of a cloud's credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialShape {
    /// One bearer API token (`ApiToken` on the wire, `<provider>.token` in errors).
    Token(&'static TokenShape),
    /// An AWS access key (optionally temporary, optionally assuming a role) or the control
    /// plane's own AWS identity.
    AwsKeys,
    /// An Azure service principal as a JSON object.
    AzureServicePrincipal,
    /// A Google service-account key or workload identity federation file, as JSON.
    GoogleServiceAccount,
}

/// A bearer token's rule and the words shown where it is asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct TokenShape {
    /// Prefixes the token may start with (none, or one of these).
    pub prefixes: &'static [&'static str],
    /// The length after the prefix, inclusive bounds.
    pub min_len: usize,
    pub max_len: usize,
    /// The characters allowed after the prefix.
    pub chars: TokenChars,
    /// The rule as an error says it, after the field name: `must be …`.
    pub rule: &'static str,
    /// What the token acts for, as a verified identity names it (`project`, `account`).
    pub owner: &'static str,
    /// The form's hint in an empty input.
    pub placeholder: &'static str,
    /// What kind of token, with which rights: shown under the input and in the CLI prompt.
    pub help: &'static str,
}

/// The characters a token may hold after its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenChars {
    /// `A-Z`, `a-z`, `0-9`.
    Alphanumeric,
    /// `0-9`, `a-f`.
    LowerHex,
}

impl TokenChars {
    fn allows(self, b: u8) -> bool {
        match self {
            TokenChars::Alphanumeric => b.is_ascii_alphanumeric(),
            TokenChars::LowerHex => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        }
    }
}

impl TokenShape {
    /// Whether `token` (already trimmed) meets the rule.
    pub fn accepts(&self, token: &str) -> bool {
        let body = self
            .prefixes
            .iter()
            .find_map(|p| token.strip_prefix(p))
            .unwrap_or(token);
        (self.min_len..=self.max_len).contains(&body.len())
            && body.bytes().all(|b| self.chars.allows(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderId;

    fn token_shape(p: ProviderId) -> &'static TokenShape {
        match p.credential_shape() {
            CredentialShape::Token(shape) => shape,
            other => panic!("{p} takes {other:?}"),
        }
    }

    #[test]
    fn digitalocean_accepts_prefixed_and_legacy_forms_only() {
        let shape = token_shape(ProviderId::DigitalOcean);
        let hex = "0123456789abcdef".repeat(4);
        assert!(shape.accepts(&hex));
        assert!(shape.accepts(&format!("dop_v1_{hex}")));
        assert!(shape.accepts(&format!("doo_v1_{hex}")));
        assert!(!shape.accepts(&format!("dor_v1_{hex}")));
        assert!(!shape.accepts(&format!("dop_v1_dop_v1_{}", &hex[..57])));
        assert!(!shape.accepts(&hex.to_ascii_uppercase()));
    }

    #[test]
    fn hetzner_length_bounds_are_inclusive() {
        let shape = token_shape(ProviderId::Hetzner);
        assert!(shape.accepts(&"a".repeat(32)));
        assert!(shape.accepts(&"a".repeat(128)));
        assert!(!shape.accepts(&"a".repeat(31)));
        assert!(!shape.accepts(&"a".repeat(129)));
        assert!(!shape.accepts(&format!("{}-", "a".repeat(40))));
    }
}
