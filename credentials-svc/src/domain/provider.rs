//! The five cloud providers a credential can be stored for.
use std::fmt;
use std::str::FromStr;

/// A cloud provider. The declaration order is the fixed display order of the provider cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderKind {
    /// Hetzner Cloud.
    Hetzner,
    /// DigitalOcean.
    DigitalOcean,
    /// Amazon EC2.
    Aws,
    /// Microsoft Azure (ARM).
    Azure,
    /// Google Compute Engine.
    Gcp,
}

impl ProviderKind {
    /// Every provider, in card order.
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::Hetzner,
        ProviderKind::DigitalOcean,
        ProviderKind::Aws,
        ProviderKind::Azure,
        ProviderKind::Gcp,
    ];

    /// The stable lowercase identifier used in storage, flags and AAD.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Hetzner => "hetzner",
            ProviderKind::DigitalOcean => "digitalocean",
            ProviderKind::Aws => "aws",
            ProviderKind::Azure => "azure",
            ProviderKind::Gcp => "gcp",
        }
    }

    /// The label shown on the provider card.
    pub fn display_name(self) -> &'static str {
        match self {
            ProviderKind::Hetzner => "Hetzner",
            ProviderKind::DigitalOcean => "DigitalOcean",
            ProviderKind::Aws => "AWS",
            ProviderKind::Azure => "Azure",
            ProviderKind::Gcp => "Google Cloud",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown provider name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider, want one of hetzner, digitalocean, aws, azure, gcp")]
pub struct UnknownProvider;

impl FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProviderKind::ALL
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
        for p in ProviderKind::ALL {
            assert_eq!(p.as_str().parse::<ProviderKind>(), Ok(p));
        }
        assert_eq!("Hetzner".parse::<ProviderKind>(), Err(UnknownProvider));
    }
}
