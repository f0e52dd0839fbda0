//! `levelrail-credentials`: administration of the credentials service's keys.
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use levelrail_credentials::broker::GrantIssuers;
use levelrail_credentials::startup::{self, StorageConfig};
use levelrail_credentials::verify::Verifier;
use secrecy::SecretString;

#[derive(Debug, Parser)]
#[command(
    name = "levelrail-credentials",
    version,
    about = "Levelrail credentials service administration"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Add a new master key, promote it, re-wrap every data key, retire the old key.
    /// Resumable: run it again (or start the server) to finish an interrupted rotation.
    RotateMasterKey {
        /// The control plane's data directory.
        #[arg(long, env = "LEVELRAIL_DATA_DIR", default_value = "levelrail-data")]
        data_dir: PathBuf,
        /// Database URL when not the SQLite file in the data directory.
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: Option<SecretString>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("info")
        .init();
    let Command::RotateMasterKey {
        data_dir,
        database_url,
    } = Cli::parse().command;
    let cfg = StorageConfig {
        data_dir: &data_dir,
        database_url: database_url.as_ref(),
        master_key: None,
    };
    let run = async {
        let creds = startup::open(cfg, Verifier::none(), Arc::new(GrantIssuers::default())).await?;
        anyhow::Ok(creds.rotate_master_key().await?)
    };
    match run.await {
        Ok(r) => {
            println!(
                "master key rotated: primary {}, {} data keys re-wrapped, retired {:?}",
                r.primary, r.rewrapped, r.retired
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
