//! `levelrail serve | rotate-master-key | pki init`.
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
    /// The internal PKI of a split deployment (`levelrail-credentials serve`,
    /// `levelrail-provisioner serve`).
    #[command(subcommand)]
    Pki(Pki),
}

#[derive(Debug, Subcommand)]
enum Pki {
    /// Create the internal CA in DIR (or reuse it) and issue the credentials service's
    /// server certificate and the provisioner's client certificate. Run it again to rotate
    /// the certificates (see the README).
    Init {
        /// Where the CA and the certificates are kept.
        #[arg(long, env = "LEVELRAIL_PKI_DIR", default_value = "levelrail-pki")]
        dir: std::path::PathBuf,
        /// Extra names of the credentials service in its certificate (the host the
        /// provisioners dial), besides `levelrail-credentials`, `localhost` and `127.0.0.1`.
        #[arg(long = "credentials-san", value_delimiter = ',')]
        credentials_sans: Vec<String>,
        /// Names of the PostgreSQL server (the host in the services' database URLs): also
        /// issue its server certificate, `postgres.pem` and `postgres.key`, so the services
        /// can reach it with `sslmode=verify-full&sslrootcert=<internal-ca.pem>`.
        #[arg(long = "postgres-san", value_delimiter = ',')]
        postgres_sans: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    levelrail::telemetry::init();
    let result = match Cli::parse().command {
        Command::Serve(mut cfg) => {
            async {
                cfg.master_key = levelrail::config::master_key_from_env()?;
                levelrail::App::build(*cfg).await?.run_until_stopped().await
            }
            .await
        }
        Command::RotateMasterKey(cfg) => levelrail::startup::rotate_master_key(cfg).await,
        Command::Pki(Pki::Init {
            dir,
            credentials_sans,
            postgres_sans,
        }) => levelrail::pki::init(&dir, &credentials_sans, &postgres_sans).map(|files| {
            println!(
                "internal CA: {}\ncredentials service: {} {}\nprovisioner: {} {}",
                files.ca.display(),
                files.credentials.0.display(),
                files.credentials.1.display(),
                files.provisioner.0.display(),
                files.provisioner.1.display()
            );
            if !postgres_sans.is_empty() {
                println!(
                    "PostgreSQL: {} {}",
                    files.postgres.0.display(),
                    files.postgres.1.display()
                );
            }
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
