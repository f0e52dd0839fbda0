//! The wire enum `levelrail.credentials.v1.Provider` and the workspace's one provider
//! identifier (`levelrail_types::ProviderId`), mapped here once for every crate.
use levelrail_types::{ProviderId, UnknownProvider};

use crate::credentials::v1::Provider;

impl From<ProviderId> for Provider {
    fn from(p: ProviderId) -> Self {
        match p {
            ProviderId::Hetzner => Provider::Hetzner,
            ProviderId::DigitalOcean => Provider::Digitalocean,
            ProviderId::Aws => Provider::Aws,
            ProviderId::Azure => Provider::Azure,
            ProviderId::Gcp => Provider::Gcp,
        }
    }
}

impl TryFrom<Provider> for ProviderId {
    type Error = UnknownProvider;

    /// `UNSPECIFIED` names no provider.
    fn try_from(p: Provider) -> Result<Self, Self::Error> {
        match p {
            Provider::Unspecified => Err(UnknownProvider),
            Provider::Hetzner => Ok(ProviderId::Hetzner),
            Provider::Digitalocean => Ok(ProviderId::DigitalOcean),
            Provider::Aws => Ok(ProviderId::Aws),
            Provider::Azure => Ok(ProviderId::Azure),
            Provider::Gcp => Ok(ProviderId::Gcp),
        }
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
}
