//! `levelrail-credentials serve | rotate-master-key`: the credentials service as its own
//! process, and its key administration.
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use levelrail::config::RotateConfig;
use levelrail::credentials_server::{CredentialsServeConfig, CredentialsServer};

#[derive(Debug, Parser)]
#[command(
    name = "levelrail-credentials",
    version,
    about = "Levelrail credentials service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the credentials API and, over mTLS to the provisioners, the credential broker.
    Serve(Box<CredentialsServeConfig>),
    /// Add a new master key, promote it, re-wrap every data key, retire the old key.
    /// Resumable: run it again (or start the server) to finish an interrupted rotation.
    RotateMasterKey(RotateConfig),
}

#[tokio::main]
async fn main() -> ExitCode {
    levelrail::telemetry::init();
    let result = match Cli::parse().command {
        Command::Serve(mut cfg) => {
            async {
                // With --master-key-file, LEVELRAIL_MASTER_KEY_PREVIOUS may come alone.
                if cfg.master_key_file.is_none() {
                    cfg.master_key = levelrail::config::master_key_from_env()?;
                } else {
                    anyhow::ensure!(
                        std::env::var_os("LEVELRAIL_MASTER_KEY").is_none(),
                        "LEVELRAIL_MASTER_KEY and --master-key-file are both set: keep one"
                    );
                }
                CredentialsServer::build(*cfg)
                    .await?
                    .run_until_stopped()
                    .await;
                anyhow::Ok(())
            }
            .await
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
