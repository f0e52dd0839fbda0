//! Typed configuration of `levelrail serve`, from flags and environment variables. The only
//! place that reads the environment.
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use secrecy::SecretString;

/// `levelrail serve` options.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Directory for the database, master keyring, CA and admin token (created 0700).
    #[arg(long, env = "LEVELRAIL_DATA_DIR", default_value = "levelrail-data")]
    pub data_dir: PathBuf,
    /// Public listener: gRPC, gRPC-web and the web app on one port. Plaintext is allowed
    /// only on a loopback address; anything else is served over TLS.
    #[arg(long, env = "LEVELRAIL_LISTEN", default_value = "127.0.0.1:7443")]
    pub listen: SocketAddr,
    /// Agent listener (TLS with a certificate from the control-plane CA).
    #[arg(long, env = "LEVELRAIL_AGENT_LISTEN", default_value = "127.0.0.1:9443")]
    pub agent_listen: SocketAddr,
    /// Run the simulated Hetzner and DigitalOcean clouds, so the wizard works without a
    /// cloud account.
    #[arg(long)]
    pub demo: bool,
    /// Database of the credentials service: `sqlite://PATH` (default: in the data
    /// directory) or `postgres://…`. Never logged.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<SecretString>,
    /// Master key (base64, 32 bytes) instead of the keyring file in the data directory.
    #[arg(
        long = "master-key-from-env",
        env = "LEVELRAIL_MASTER_KEY",
        hide_env_values = true,
        hide = true
    )]
    pub master_key: Option<SecretString>,
    /// TLS certificate chain (PEM) for the public listener; with `--tls-key`. Without it,
    /// a non-loopback listener gets a certificate from the control-plane CA.
    #[arg(long, env = "LEVELRAIL_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for `--tls-cert`.
    #[arg(long, env = "LEVELRAIL_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve the public listener over TLS even on loopback (certificate from the CA unless
    /// `--tls-cert` is given).
    #[arg(long)]
    pub tls: bool,
    /// Extra host names / addresses for the CA-issued server certificate.
    #[arg(long = "tls-san", env = "LEVELRAIL_TLS_SANS", value_delimiter = ',')]
    pub tls_sans: Vec<String>,
    /// Origins allowed to call the API from a browser (CORS), e.g.
    /// `https://console.example.com`. The web app served by this process needs none.
    #[arg(
        long = "allowed-origin",
        env = "LEVELRAIL_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Directory of the built web app; default: `web/dist` next to the binary's workspace,
    /// if present.
    #[arg(long, env = "LEVELRAIL_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Hetzner Cloud API base URL (proxies, tests).
    #[arg(
        long,
        env = "LEVELRAIL_HETZNER_API_URL",
        default_value = "https://api.hetzner.cloud/v1"
    )]
    pub hetzner_api_url: String,
    /// DigitalOcean API base URL (proxies, tests).
    #[arg(
        long,
        env = "LEVELRAIL_DIGITALOCEAN_API_URL",
        default_value = "https://api.digitalocean.com/v2"
    )]
    pub digitalocean_api_url: String,
    /// The address provisioned VMs dial to enroll (`host:port` of the agent listener as
    /// seen from the VMs). Default: the bound agent address.
    #[arg(long, env = "LEVELRAIL_AGENT_ADVERTISE")]
    pub agent_advertise: Option<String>,
    /// The agent container image provisioned VMs run (`repo:tag` or `repo@sha256:…`).
    /// Default: the release tag of this version.
    #[arg(long, env = "LEVELRAIL_AGENT_IMAGE")]
    pub agent_image: Option<String>,
    /// How long a provision may take before it fails and is cleaned up (Go duration,
    /// e.g. `20m`).
    #[arg(long, env = "APP_NODE_PROVISION_TIMEOUT")]
    pub provision_timeout: Option<String>,
    /// Maximum concurrent requests on the public listener.
    #[arg(long, default_value_t = 512)]
    pub max_concurrent_requests: usize,
}

/// `rotate-master-key` options.
#[derive(Debug, Clone, Args)]
pub struct RotateConfig {
    /// The data directory of the control plane.
    #[arg(long, env = "LEVELRAIL_DATA_DIR", default_value = "levelrail-data")]
    pub data_dir: PathBuf,
    /// Database URL, when not the SQLite file in the data directory.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<SecretString>,
}
