//! The settings every command shares, as parsed from the global flags, and the value parser
//! for secret flags. A leaf: `args` fills these in, `context` and the commands read them, and
//! this module imports nothing from the crate.
use std::path::PathBuf;

use secrecy::SecretString;

/// Parses a flag holding secret material straight into a [`SecretString`], so no `Debug` of
/// the parsed flags can show it.
pub(crate) fn secret_arg(value: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(value))
}

/// Where the API token comes from, decided at parse time; the file is read later so that an
/// unreadable file is reported like any other input error.
#[derive(Debug)]
pub(crate) enum TokenInput {
    /// `--token` or `LEVELRAIL_TOKEN`.
    Value(SecretString),
    /// `--token-file` or `LEVELRAIL_TOKEN_FILE`.
    File(PathBuf),
    /// Neither was given.
    Missing,
    /// Both `--token` and `--token-file` were given on the command line.
    Ambiguous,
}

/// The global settings every command shares.
#[derive(Debug)]
pub(crate) struct Globals {
    /// `--api-url`.
    pub(crate) api_url: String,
    /// The chosen token source.
    pub(crate) token: TokenInput,
    /// `--json`.
    pub(crate) json: bool,
    /// `--ca-cert`.
    pub(crate) ca_cert: Option<PathBuf>,
    /// `--insecure`: plain http:// to another machine is allowed.
    pub(crate) insecure: bool,
}
