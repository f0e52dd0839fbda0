//! Provider names as the operator types them (`hetzner`, `aws`, …) and their proto enum.
use levelrail_proto::credentials::v1::Provider;

use crate::error::CliError;

/// Every provider, in the fixed order of the API and the docs (`ProviderId::ALL`).
fn all() -> impl Iterator<Item = Provider> {
    levelrail_types::ProviderId::ALL
        .into_iter()
        .map(Provider::from)
}

/// The message for a run without `--provider`.
pub(crate) const PROVIDER_REQUIRED: &str = "--provider is required";

/// The name of `provider` on the command line and in JSON output.
pub(crate) fn name(provider: Provider) -> &'static str {
    levelrail_types::ProviderId::try_from(provider).map_or("unspecified", |p| p.as_str())
}

/// The name of a provider as it arrives on the wire (an `i32`); a value this CLI does not
/// know (a newer server) is shown as `unknown(<n>)` rather than failing.
pub(crate) fn name_of(value: i32) -> String {
    Provider::try_from(value)
        .map(|p| name(p).to_owned())
        .unwrap_or_else(|_| format!("unknown({value})"))
}

/// Parses `--provider`: missing → `--provider is required`; unknown → the list of known
/// names. Case and surrounding whitespace are ignored.
pub(crate) fn parse(value: Option<&str>) -> Result<Provider, CliError> {
    let Some(value) = value else {
        return Err(CliError::usage(PROVIDER_REQUIRED));
    };
    let wanted = value.trim().to_ascii_lowercase();
    if wanted.is_empty() {
        return Err(CliError::usage(PROVIDER_REQUIRED));
    }
    all().find(|p| name(*p) == wanted).ok_or_else(|| {
        let names: Vec<&str> = all().map(name).collect();
        CliError::usage(format!(
            "unknown provider \"{value}\", want one of {}",
            names.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_name_parses_back_to_itself() {
        for provider in all() {
            assert_eq!(parse(Some(name(provider))).expect("parses"), provider);
        }
    }

    #[test]
    fn an_unknown_provider_lists_the_known_ones() {
        let err = parse(Some("linode")).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown provider \"linode\", want one of hetzner, digitalocean, aws, azure, gcp"
        );
    }

    #[test]
    fn a_missing_provider_says_it_is_required() {
        assert_eq!(
            parse(None).expect_err("missing").to_string(),
            "--provider is required"
        );
    }

    #[test]
    fn an_unknown_wire_value_is_shown_not_fatal() {
        assert_eq!(name_of(42), "unknown(42)");
        assert_eq!(name_of(Provider::Gcp as i32), "gcp");
    }
}
