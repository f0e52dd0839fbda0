//! The clouds' URL-safe slugs and labels (the order of the cards is the server's).
use levelrail_proto::credentials::v1::Provider;
use levelrail_types::ProviderId;

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
        let slugs: Vec<_> = ProviderId::ALL
            .into_iter()
            .map(|p| slug(Provider::from(p)))
            .collect();
        assert_eq!(slugs, ["hetzner", "digitalocean", "aws", "azure", "gcp"]);
    }
}
