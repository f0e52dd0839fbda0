//! The clouds' URL-safe slugs and labels (the order of the cards is the server's).
use levelrail_proto::credentials::v1::Provider;
use levelrail_types::{CredentialShape, ProviderId};

/// The slug used in element ids and test ids (`hetzner`, `digitalocean`, `aws`, `azure`,
/// `gcp`).
pub fn slug(p: Provider) -> &'static str {
    ProviderId::try_from(p).map_or("unknown", ProviderId::as_str)
}

/// The human label.
pub fn label(p: Provider) -> &'static str {
    ProviderId::try_from(p).map_or("Unknown provider", ProviderId::display_name)
}

/// What the provider's credential form asks for (`None` for a provider this app does not
/// know).
pub fn credential_shape(p: Provider) -> Option<CredentialShape> {
    ProviderId::try_from(p)
        .ok()
        .map(ProviderId::credential_shape)
}

/// The field path of a token cloud's token (`hetzner.token`), as server errors name it.
pub fn token_path(p: Provider) -> String {
    format!("{}.token", slug(p))
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
