//! `levelrail-agent`: the enrollment side of the Levelrail node agent.
//!
//! Reads its settings ([`config`]), reuses a stored node identity ([`identity`]) or enrolls
//! with the join token over a connection pinned to the control-plane CA ([`pin`],
//! [`enroll`]), then keeps a heartbeat over mTLS (`heartbeat.rs`). Every way it stops has its
//! own exit code and one-line message ([`exit`]).

pub mod config;
mod connect;
pub mod docker;
pub mod enroll;
mod envfile;
pub mod exit;
mod heartbeat;
pub mod identity;
pub mod pin;
mod retry;
pub mod telemetry;
pub mod token;

#[cfg(test)]
mod test_pki;

pub use config::{Args, Config};
pub use exit::{AgentError, ExitCode};

use tracing::{info, warn};

use crate::identity::Identity;

/// Runs the agent for `args` until it fails, finishes (`--once`) or is told to stop.
pub async fn run(args: &Args) -> Result<(), AgentError> {
    let config = Config::load(args)?;
    tokio::select! {
        result = run_with(&config, args.once) => result,
        () = shutdown_signal() => {
            info!("stopping on signal");
            Ok(())
        }
    }
}

/// Enrolls unless an identity exists, then heartbeats (once, with `once`).
pub async fn run_with(config: &Config, once: bool) -> Result<(), AgentError> {
    let identity = match Identity::load(&config.identity_file)? {
        Some(identity) => {
            info!(node_id = %identity.node_id, path = %config.identity_file.display(),
                "reusing the stored node identity; not enrolling again");
            if config
                .node_name()
                .is_some_and(|name| name != identity.node_name)
            {
                warn!(stored = %identity.node_name, "APP_NODE_NAME differs from the stored identity's name; keeping the identity");
            }
            identity
        }
        None => {
            let enrollment = config.enrollment()?;
            let identity = enroll::enroll(&enrollment, config.enroll_retry).await?;
            identity.save(&config.identity_file)?;
            info!(node_id = %identity.node_id, path = %config.identity_file.display(), "node identity saved");
            remove_bootstrap_files(&config.bootstrap_files);
            identity
        }
    };
    // The configured address wins, so a control plane can move; the pin stays the identity's.
    let addr = match config.control_plane_addr() {
        Some(addr) => addr.clone(),
        None => identity
            .addr()
            .ok_or_else(|| AgentError::config(config::ADDR, "is required"))?,
    };
    heartbeat::run(heartbeat::Heartbeats {
        identity: &identity,
        addr: &addr,
        identity_file: &config.identity_file,
        once,
        budget: config.enroll_retry,
        docker: &config.docker,
    })
    .await
}

/// Deletes the join token and the progress credential once the identity is saved: the
/// token is spent and the credential is refused from now on, so neither stays on disk.
fn remove_bootstrap_files(paths: &[std::path::PathBuf]) {
    for path in paths {
        match std::fs::remove_file(path) {
            Ok(()) => info!(path = %path.display(), "bootstrap secret deleted"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                warn!(path = %path.display(), error = %e, "could not delete a bootstrap secret")
            }
        }
    }
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            warn!(error = %e, "cannot listen for SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
