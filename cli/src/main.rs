//! `levelrail-cli`: the operator command line. All behaviour lives in the library
//! ([`levelrail_cli::run`]) so the tests drive exactly what this binary runs; this file only
//! wires the process's stdin, stdout and stderr to it and turns the result into an exit code.
use std::io::Write as _;
use std::process::ExitCode;

use levelrail_cli::{Io, StdinSecrets};

// One current-thread runtime: the CLI makes a handful of sequential calls, and reading piped
// stdin or prompting blocks only this command, which has nothing else to do meanwhile.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut secrets = StdinSecrets;
    let code = {
        let mut io = Io {
            stdout: &mut stdout,
            stderr: &mut stderr,
            secrets: &mut secrets,
        };
        levelrail_cli::run(std::env::args_os(), &mut io).await
    };
    // A closed pipe (`| head`) is not worth a second error message.
    let _ = stdout.flush();
    ExitCode::from(code)
}
