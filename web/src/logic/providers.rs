//! The five clouds: their fixed order, URL-safe slugs and labels.
use levelrail_proto::credentials::v1::Provider;

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
    match p {
        Provider::Unspecified => "unknown",
        Provider::Hetzner => "hetzner",
        Provider::Digitalocean => "digitalocean",
        Provider::Aws => "aws",
        Provider::Azure => "azure",
        Provider::Gcp => "gcp",
    }
}

/// The human label.
pub fn label(p: Provider) -> &'static str {
    match p {
        Provider::Unspecified => "Unknown provider",
        Provider::Hetzner => "Hetzner",
        Provider::Digitalocean => "DigitalOcean",
        Provider::Aws => "AWS",
        Provider::Azure => "Azure",
        Provider::Gcp => "Google Cloud",
    }
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
