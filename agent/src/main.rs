//! `levelrail-agent [--env-file PATH] [--once]`: the node agent binary. Everything but
//! argument parsing and the exit status lives in the library (`lib.rs`); the exit codes are
//! listed in `exit.rs` and in `--help`.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let args = levelrail_agent::Args::parse();
    levelrail_agent::telemetry::init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("levelrail-agent: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(levelrail_agent::run(&args));
    // Shut the runtime down first, so the exit message is the last line on stderr.
    drop(runtime);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("levelrail-agent: {}", error.one_line());
            ExitCode::from(error.exit_code().code())
        }
    }
}
