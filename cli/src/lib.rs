//! `levelrail-cli` as a library: flag parsing, the command tree and the gRPC calls behind one
//! entry point, [`run`], so integration tests run exactly what the binary runs, against an
//! in-process fake server and with scripted secret input.
//!
//! Layout: `args` (flag parsing and token source choice), `globals` and `outcome` (leaf types
//! the others share: the parsed global settings, how a command ended), `context` (what every
//! command gets: the output streams, `--json`, an authenticated channel), `commands/` (one
//! module per command group), `io` (the streams and secret input of one run, [`Io`]),
//! `error`/`status` (the one-line errors and exit codes), `secrets` (piped stdin or a no-echo
//! prompt), `output` (tables, key/value views and timestamps), `provider` (provider names),
//! `duration` (Go-style durations), `validate` (local checks of flag values).

mod args;
mod client;
mod commands;
mod context;
mod duration;
mod error;
mod globals;
mod io;
mod outcome;
mod output;
mod provider;
mod secrets;
mod status;
mod validate;

use std::ffi::OsString;

pub use io::Io;
pub use secrets::{SecretSource, StdinSecrets};

use crate::context::Context;
use crate::outcome::Outcome;

/// Runs the CLI with `args` (including the program name, as `std::env::args_os` yields them)
/// and returns the process exit code: 0 on success, 1 when the server or the network failed
/// (or a verification failed), 2 for usage and input errors.
pub async fn run<I, T>(args: I, io: &mut Io<'_>) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let invocation = match args::parse(args) {
        Ok(invocation) => invocation,
        Err(err) => return error::report_clap(&err, io.stdout, io.stderr),
    };
    let result = match Context::new(invocation.globals, io) {
        Ok(mut ctx) => commands::run(invocation.command, &mut ctx).await,
        Err(err) => Err(err),
    };
    match result {
        Ok(Outcome::Success) => 0,
        Ok(Outcome::Unsuccessful) => 1,
        Err(err) => {
            // Nothing more useful can be done when stderr itself is gone.
            let _ = writeln!(io.stderr, "error: {err}");
            err.exit_code()
        }
    }
}
