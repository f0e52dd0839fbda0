//! The clouds Levelrail creates servers at, with their stable names.
use std::fmt;
use std::str::FromStr;

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
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown provider name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider, want one of hetzner, digitalocean, aws, azure, gcp")]
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
