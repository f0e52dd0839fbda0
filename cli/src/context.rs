//! What every command gets: the output streams and secret input, `--json`, and a lazily
//! connected, authenticated channel to the control plane.
use std::path::Path;

use secrecy::SecretString;

use crate::client::{AuthedChannel, BearerAuth, Connection};
use crate::error::CliError;
use crate::globals::{Globals, TokenInput};
use crate::io::Io;
use crate::status;

/// The message for a run without any API token.
pub(crate) const NO_TOKEN: &str =
    "no API token: pass --token, set LEVELRAIL_TOKEN or use --token-file";

/// One command's view of the run.
#[derive(Debug)]
pub(crate) struct Context<'a, 'io> {
    io: &'a mut Io<'io>,
    json: bool,
    connection: Connection,
}

impl<'a, 'io> Context<'a, 'io> {
    /// Resolves the token and validates the URL and TLS settings; nothing is sent yet.
    pub(crate) fn new(globals: Globals, io: &'a mut Io<'io>) -> Result<Self, CliError> {
        let token = resolve_token(globals.token)?;
        let connection = Connection::new(
            &globals.api_url,
            globals.ca_cert.as_deref(),
            BearerAuth::new(&token)?,
            globals.insecure,
        )?;
        let mut ctx = Self {
            io,
            json: globals.json,
            connection,
        };
        if ctx.connection.is_plaintext() && globals.ca_cert.is_some() {
            ctx.warn("--ca-cert has no effect on an http:// API URL")?;
        }
        Ok(ctx)
    }

    /// True under `--json`: print one JSON document instead of text.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// Connects to the control plane. Call it after all local validation and input, so a
    /// typo is reported without a network round trip.
    pub(crate) async fn channel(&self) -> Result<AuthedChannel, CliError> {
        self.connection.connect().await
    }

    /// The CLI error for a failed RPC.
    pub(crate) fn rpc_error(&self, status: &tonic::Status) -> CliError {
        status::from_status(status, self.connection.api_url())
    }

    /// The CLI error for a failed RPC about one object: NOT_FOUND becomes
    /// `<kind> <id> not found`; every other status maps as in [`Self::rpc_error`].
    pub(crate) fn rpc_error_about(&self, status: &tonic::Status, kind: &str, id: &str) -> CliError {
        if status.code() == tonic::Code::NotFound {
            return CliError::failed(format!("{kind} {id} not found"));
        }
        self.rpc_error(status)
    }

    /// Writes `text` and a newline to stdout.
    pub(crate) fn print(&mut self, text: &str) -> Result<(), CliError> {
        writeln!(self.io.stdout, "{text}")
            .map_err(|e| CliError::failed(format!("cannot write the output: {e}")))
    }

    /// Writes the pretty-printed JSON document to stdout.
    pub(crate) fn print_json(&mut self, value: &serde_json::Value) -> Result<(), CliError> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::failed(format!("cannot encode the output: {e}")))?;
        self.print(&text)
    }

    /// Writes the JSON document on one line to stdout: one line per event of a stream.
    pub(crate) fn print_json_line(&mut self, value: &serde_json::Value) -> Result<(), CliError> {
        let text = serde_json::to_string(value)
            .map_err(|e| CliError::failed(format!("cannot encode the output: {e}")))?;
        self.print(&text)
    }

    /// Writes `text` and a newline to stderr: information for the operator that must stay
    /// out of captured stdout.
    pub(crate) fn note(&mut self, text: &str) -> Result<(), CliError> {
        writeln!(self.io.stderr, "{text}")
            .map_err(|e| CliError::failed(format!("cannot write to stderr: {e}")))
    }

    /// Writes `warning: <text>` to stderr.
    pub(crate) fn warn(&mut self, text: &str) -> Result<(), CliError> {
        writeln!(self.io.stderr, "warning: {text}")
            .map_err(|e| CliError::failed(format!("cannot write to stderr: {e}")))
    }

    /// The secret input (piped stdin or the prompt).
    pub(crate) fn secrets(&mut self) -> &mut dyn crate::secrets::SecretSource {
        &mut *self.io.secrets
    }
}

fn resolve_token(input: TokenInput) -> Result<SecretString, CliError> {
    let token = match input {
        TokenInput::Value(token) => token,
        TokenInput::File(path) => read_token_file(&path)?,
        TokenInput::Missing => return Err(CliError::usage(NO_TOKEN)),
        TokenInput::Ambiguous => {
            return Err(CliError::usage(
                "pass either --token or --token-file, not both",
            ));
        }
    };
    if secrecy::ExposeSecret::expose_secret(&token)
        .trim()
        .is_empty()
    {
        return Err(CliError::usage(NO_TOKEN));
    }
    Ok(token)
}

fn read_token_file(path: &Path) -> Result<SecretString, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!(
            "cannot read the token file {}: {e}",
            path.display()
        ))
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(CliError::usage(format!(
            "the token file {} is empty",
            path.display()
        )));
    }
    Ok(SecretString::from(token))
}
