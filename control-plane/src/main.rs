//! `levelrail serve | rotate-master-key`.
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use levelrail::config::{RotateConfig, ServeConfig};

#[derive(Debug, Parser)]
#[command(name = "levelrail", version, about = "Levelrail control plane")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the control plane (credentials, provisioner, web app) in one process.
    Serve(Box<ServeConfig>),
    /// Rotate the master key of the credentials service (resumable).
    RotateMasterKey(RotateConfig),
}

#[tokio::main]
async fn main() -> ExitCode {
    levelrail::telemetry::init();
    let result = match Cli::parse().command {
        Command::Serve(cfg) => {
            async { levelrail::App::build(*cfg).await?.run_until_stopped().await }.await
        }
        Command::RotateMasterKey(cfg) => levelrail::startup::rotate_master_key(cfg).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
