//! The wire enum `levelrail.credentials.v1.Provider` and the workspace's one provider
//! identifier (`levelrail_types::ProviderId`), mapped here once for every crate, by name:
//! `PROVIDER_<NAME>` on the wire is the provider whose identifier is `<name>`, so a new
//! cloud needs only its value in the proto (a test checks every provider has one).
use levelrail_types::{ProviderId, UnknownProvider};

use crate::credentials::v1::Provider;

/// The prefix of every wire name (`PROVIDER_HETZNER`).
const PREFIX: &str = "PROVIDER_";

impl From<ProviderId> for Provider {
    /// `UNSPECIFIED` for a provider the proto does not list, which the round-trip test
    /// forbids.
    fn from(p: ProviderId) -> Self {
        let wire = format!("{PREFIX}{}", p.as_str().to_ascii_uppercase());
        Provider::from_str_name(&wire).unwrap_or(Provider::Unspecified)
    }
}

impl TryFrom<Provider> for ProviderId {
    type Error = UnknownProvider;

    /// `UNSPECIFIED` names no provider.
    fn try_from(p: Provider) -> Result<Self, Self::Error> {
        p.as_str_name()
            .strip_prefix(PREFIX)
            .ok_or(UnknownProvider)?
            .to_ascii_lowercase()
            .parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_round_trips_through_the_wire_enum() {
        for p in ProviderId::ALL {
            assert_eq!(ProviderId::try_from(Provider::from(p)), Ok(p));
        }
        assert_eq!(
            ProviderId::try_from(Provider::Unspecified),
            Err(UnknownProvider)
        );
    }

    #[test]
    fn every_wire_value_names_a_provider() {
        let wire: Vec<Provider> = (1..).map_while(|n| Provider::try_from(n).ok()).collect();
        assert_eq!(wire.len(), ProviderId::ALL.len());
        for p in wire {
            assert!(ProviderId::try_from(p).is_ok(), "{}", p.as_str_name());
        }
    }
}
