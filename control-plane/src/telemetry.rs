//! Tracing setup: structured logs to stderr, filter from `LEVELRAIL_LOG` (then `RUST_LOG`),
//! default `info`.
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Safe to call twice (the second call is a no-op).
pub fn init() {
    let filter = EnvFilter::try_from_env("LEVELRAIL_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
