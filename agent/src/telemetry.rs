//! Logging: `tracing` to stderr, filtered by `LEVELRAIL_LOG` (default `info`).
//!
//! Nothing the agent logs carries the join token or a private key: tokens appear by id
//! (`njt_…`) only, and the secret types redact themselves in `Debug`.

use tracing_subscriber::EnvFilter;

use crate::config::{LOG_FILTER, process_env};

/// Installs the global subscriber. A bad filter falls back to `info`; calling twice is a
/// no-op.
pub fn init() {
    let filter = process_env(LOG_FILTER)
        .ok()
        .flatten()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
