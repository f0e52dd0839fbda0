//! The clouds Levelrail creates servers at, with their stable names.
use std::fmt;
use std::str::FromStr;

use crate::credential_shape::{CredentialShape, TokenChars, TokenShape};

/// A cloud provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderId {
    /// Hetzner Cloud.
    Hetzner,
    DigitalOcean,
    /// Amazon EC2.
    Aws,
    /// Microsoft Azure (ARM).
    Azure,
    /// Google Compute Engine.
    Gcp,
}

impl ProviderId {
    /// Every provider, in card order.
    pub const ALL: [ProviderId; 5] = [
        ProviderId::Hetzner,
        ProviderId::DigitalOcean,
        ProviderId::Aws,
        ProviderId::Azure,
        ProviderId::Gcp,
    ];

    /// Every identifier, as a message lists them: `hetzner, digitalocean, aws, azure or gcp`.
    pub fn choices() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|p| p.as_str()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The stable lowercase identifier used in storage, flags, labels and AAD.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderId::Hetzner => "hetzner",
            ProviderId::DigitalOcean => "digitalocean",
            ProviderId::Aws => "aws",
            ProviderId::Azure => "azure",
            ProviderId::Gcp => "gcp",
        }
    }

    /// The label shown to operators (provider cards, messages).
    pub fn display_name(self) -> &'static str {
        match self {
            ProviderId::Hetzner => "Hetzner",
            ProviderId::DigitalOcean => "DigitalOcean",
            ProviderId::Aws => "AWS",
            ProviderId::Azure => "Azure",
            ProviderId::Gcp => "Google Cloud",
        }
    }

    /// What an operator pastes to connect it.
    pub fn credential_shape(self) -> CredentialShape {
        match self {
            ProviderId::Hetzner => CredentialShape::Token(&HETZNER_TOKEN),
            ProviderId::DigitalOcean => CredentialShape::Token(&DIGITALOCEAN_TOKEN),
            ProviderId::Aws => CredentialShape::AwsKeys,
            ProviderId::Azure => CredentialShape::AzureServicePrincipal,
            ProviderId::Gcp => CredentialShape::GoogleServiceAccount,
        }
    }
}

/// Hetzner Cloud project tokens are 64 alphanumerics; 32..=128 are accepted in case the
/// format grows.
static HETZNER_TOKEN: TokenShape = TokenShape {
    prefixes: &[],
    min_len: 32,
    max_len: 128,
    chars: TokenChars::Alphanumeric,
    rule: "must be 32 to 128 ASCII letters or digits (a Hetzner Cloud API token)",
    owner: "project",
    placeholder: "Paste your Hetzner API token",
    help: "A project API token with Read & Write access.",
};

/// `^(dop_v1_|doo_v1_)?[0-9a-f]{64}$`: current personal and OAuth tokens, and legacy bare hex.
static DIGITALOCEAN_TOKEN: TokenShape = TokenShape {
    prefixes: &["dop_v1_", "doo_v1_"],
    min_len: 64,
    max_len: 64,
    chars: TokenChars::LowerHex,
    rule: "must be 64 lowercase hexadecimal digits, optionally after dop_v1_ or doo_v1_",
    owner: "account",
    placeholder: "Paste your DigitalOcean API token",
    help: "A personal access token with full access, or the custom scopes the README lists \
           (droplet, firewall, ssh_key and tag create/read/delete…).",
};

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown provider name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider, want one of {}", ProviderId::choices())]
pub struct UnknownProvider;

impl FromStr for ProviderId {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProviderId::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or(UnknownProvider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_round_trips_through_its_name() {
        for p in ProviderId::ALL {
            assert_eq!(p.as_str().parse::<ProviderId>(), Ok(p));
            assert_eq!(p.to_string(), p.as_str());
        }
        assert_eq!("Hetzner".parse::<ProviderId>(), Err(UnknownProvider));
    }

    #[test]
    fn the_choices_list_every_provider_in_card_order() {
        assert_eq!(
            ProviderId::choices(),
            "hetzner, digitalocean, aws, azure or gcp"
        );
    }
}
