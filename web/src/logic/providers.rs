//! The five clouds: their fixed order, URL-safe slugs and labels.
use levelrail_proto::credentials::v1::Provider;
use levelrail_types::ProviderId;

/// Every provider, in the order of the cards and the wizard.
pub const PROVIDERS: [Provider; 5] = [
    Provider::Hetzner,
    Provider::Digitalocean,
    Provider::Aws,
    Provider::Azure,
    Provider::Gcp,
];

/// The slug used in element ids and test ids (`hetzner`, `digitalocean`, `aws`, `azure`,
/// `gcp`).
pub fn slug(p: Provider) -> &'static str {
    ProviderId::try_from(p).map_or("unknown", ProviderId::as_str)
}

/// The human label.
pub fn label(p: Provider) -> &'static str {
    ProviderId::try_from(p).map_or("Unknown provider", ProviderId::display_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_the_field_path_prefixes_of_the_credentials_api() {
        let slugs: Vec<_> = PROVIDERS.iter().map(|p| slug(*p)).collect();
        assert_eq!(slugs, ["hetzner", "digitalocean", "aws", "azure", "gcp"]);
    }
}
