//! `levelrail-provisioner serve`: one provisioner replica as its own process.
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use levelrail::provisioner_server::{self, ProvisionerServeConfig};

#[derive(Debug, Parser)]
#[command(
    name = "levelrail-provisioner",
    version,
    about = "Levelrail provisioner (one replica)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve provisions, nodes, enrollment and the agent listener, with grants from the
    /// credentials service.
    Serve(Box<ProvisionerServeConfig>),
}

#[tokio::main]
async fn main() -> ExitCode {
    levelrail::telemetry::init();
    let Command::Serve(cfg) = Cli::parse().command;
    match provisioner_server::run(*cfg).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
