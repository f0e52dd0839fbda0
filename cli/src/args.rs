//! The global flags (each readable from the environment) and how the API token is chosen from
//! `--token`, `--token-file` and their environment variables.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory as _, FromArgMatches as _, Parser};
use secrecy::SecretString;

use crate::commands::Commands;
use crate::globals::{Globals, TokenInput, secret_arg};

/// The default control-plane address: `levelrail serve` on the same machine.
pub(crate) const DEFAULT_API_URL: &str = "http://127.0.0.1:7443";

/// The help section of the flags every command accepts.
const GLOBAL: &str = "Global options";

/// Operate a Levelrail control plane: cloud provider credentials and, through them, nodes.
#[derive(Debug, Parser)]
#[command(name = "levelrail-cli", version, propagate_version = true)]
pub(crate) struct Cli {
    /// URL of the control plane's API (http:// or https://).
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "LEVELRAIL_API_URL",
        default_value = DEFAULT_API_URL,
        value_name = "URL"
    )]
    api_url: String,

    /// API token, sent as `authorization: Bearer <token>` on every request. Prefer
    /// --token-file or the environment: a flag value lands in shell history.
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "LEVELRAIL_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = secret_arg
    )]
    token: Option<SecretString>,

    /// File holding the API token (for example `admin.token` in the server's data directory).
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "LEVELRAIL_TOKEN_FILE",
        value_name = "PATH"
    )]
    token_file: Option<PathBuf>,

    /// Print one JSON document instead of text.
    #[arg(long, global = true, help_heading = GLOBAL)]
    json: bool,

    /// PEM file with the CA certificate(s) to trust for an https:// API URL, such as the
    /// control plane's own CA. Without it the public web PKI roots are trusted.
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "LEVELRAIL_CA_CERT",
        value_name = "PATH"
    )]
    ca_cert: Option<PathBuf>,

    /// Allow a plain http:// API URL whose host is not this machine. The API token then
    /// crosses the network in clear text: only on a network you trust.
    #[arg(long, global = true, help_heading = GLOBAL)]
    insecure: bool,

    #[command(subcommand)]
    command: Commands,
}

/// A parsed command line.
#[derive(Debug)]
pub(crate) struct Invocation {
    /// The global flags.
    pub(crate) globals: Globals,
    /// The command to run.
    pub(crate) command: Commands,
}

/// Parses `args` (program name first). Help and version requests come back as the
/// `clap::Error` clap uses for them.
pub(crate) fn parse<I, T>(args: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let token = token_input(&matches, cli.token, cli.token_file);
    Ok(Invocation {
        globals: Globals {
            api_url: cli.api_url,
            token,
            json: cli.json,
            ca_cert: cli.ca_cert,
            insecure: cli.insecure,
        },
        command: cli.command,
    })
}

/// A flag on the command line beats any environment variable, so an operator with
/// `LEVELRAIL_TOKEN` exported can still point one command at `--token-file`.
fn token_input(
    matches: &ArgMatches,
    token: Option<SecretString>,
    token_file: Option<PathBuf>,
) -> TokenInput {
    let on_command_line = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    match (token, token_file) {
        (Some(_), Some(_)) if on_command_line("token") && on_command_line("token_file") => {
            TokenInput::Ambiguous
        }
        (Some(token), _) if on_command_line("token") => TokenInput::Value(token),
        (_, Some(path)) if on_command_line("token_file") => TokenInput::File(path),
        (Some(token), _) => TokenInput::Value(token),
        (None, Some(path)) => TokenInput::File(path),
        (None, None) => TokenInput::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_a_valid_clap_definition() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_are_accepted_after_the_subcommand() {
        let parsed = parse([
            "levelrail-cli",
            "nodes",
            "providers",
            "list",
            "--json",
            "--api-url",
            "http://example:1",
            "--token-file",
            "/tmp/t",
        ])
        .expect("parses");
        assert!(parsed.globals.json);
        assert_eq!(parsed.globals.api_url, "http://example:1");
        assert!(matches!(parsed.globals.token, TokenInput::File(_)));
    }

    #[test]
    fn token_and_token_file_on_the_command_line_are_ambiguous() {
        let parsed = parse([
            "levelrail-cli",
            "--token",
            "t",
            "--token-file",
            "/tmp/t",
            "nodes",
            "providers",
            "list",
        ])
        .expect("parses");
        assert!(matches!(parsed.globals.token, TokenInput::Ambiguous));
    }
}
