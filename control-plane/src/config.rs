//! Typed configuration of `levelrail serve`, from flags and environment variables. The only
//! place that reads the environment.
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use levelrail_clouds::ProviderId;
use levelrail_clouds::all_clouds;
pub use levelrail_credentials::startup::MasterKey;
use secrecy::SecretString;

/// `levelrail serve` options: both services in one process.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Where the state lives.
    #[command(flatten)]
    pub storage: StorageArgs,
    /// The provisioner's listeners.
    #[command(flatten)]
    pub front: FrontArgs,
    /// The clouds' endpoints.
    #[command(flatten)]
    pub clouds: CloudArgs,
    /// Master key (base64, 32 bytes) instead of the keyring file in the data directory:
    /// from `LEVELRAIL_MASTER_KEY` only ([`master_key_from_env`]), never a flag, whose
    /// value every user of the machine could read in the process list.
    #[arg(skip)]
    pub master_key: Option<MasterKey>,
    /// On the first start, also save the admin API token to `admin.token` in the data
    /// directory (mode 0600). Without it the token is only printed, this once.
    #[arg(long)]
    pub write_admin_token: bool,
    /// Run simulated clouds (every cloud Levelrail supports), so the wizard works without a
    /// cloud account.
    #[arg(long)]
    pub demo: bool,
    /// With `--demo`: how long the demo clouds' access tokens and AWS sessions live (Go
    /// duration, e.g. `3s`; default: an hour, as real clouds issue them). A short life shows
    /// grants being renewed in the middle of a provision.
    #[arg(long, env = "LEVELRAIL_DEMO_TOKEN_LIFETIME", requires = "demo")]
    pub demo_token_lifetime: Option<String>,
    /// With `--demo`: the demo Hetzner cloud starts with two servers that carry this
    /// control plane's labels but belong to no provision it knows (as a restored database
    /// leaves them), so the orphan inventory has something to show.
    #[arg(long, env = "LEVELRAIL_DEMO_STRAY_SERVER", requires = "demo")]
    pub demo_stray_server: bool,
    /// With `--demo`: regions (GCP: zones, or regions for all their zones) where the demo
    /// clouds have no capacity left, e.g. `fsn1,nyc1,us-east-1,westeurope,us-central1-a`. A
    /// server create there fails with that provider's real capacity error, so a provision
    /// with fallback choices (`--region fsn1,nbg1`) shows its fallback.
    #[arg(
        long,
        env = "LEVELRAIL_DEMO_FULL_REGIONS",
        value_delimiter = ',',
        requires = "demo"
    )]
    pub demo_full_regions: Vec<String>,
    /// With `--demo`: enroll this many nodes (`fleet-00001`, …) with join tokens at start,
    /// as agents enrolled by hand would, so the node list has a large fleet to page and
    /// filter. They never heartbeat (offline once the liveness window passes); a node of
    /// that name enrolled by an earlier start is kept.
    #[arg(
        long,
        env = "LEVELRAIL_DEMO_FLEET",
        requires = "demo",
        value_parser = clap::value_parser!(u32).range(0..=100_000)
    )]
    pub demo_fleet: Option<u32>,
}

/// The provisioner's listeners: the public one (operators, the web app) and the agent
/// listener (the VMs).
#[derive(Debug, Clone, Args)]
pub struct FrontArgs {
    /// Public listener: gRPC, gRPC-web and the web app on one port. Plaintext is allowed
    /// only on a loopback address; anything else is served over TLS.
    #[arg(long, env = "LEVELRAIL_LISTEN", default_value = "127.0.0.1:7443")]
    pub listen: SocketAddr,
    /// TLS and browser access of the public listener.
    #[command(flatten)]
    pub public: PublicArgs,
    /// Extra host names / addresses for the server certificates the control-plane CA
    /// issues to the public and agent listeners.
    #[arg(long = "tls-san", env = "LEVELRAIL_TLS_SANS", value_delimiter = ',')]
    pub tls_sans: Vec<String>,
    /// Directory of the built web app; default (`levelrail serve`): `web/dist` next to the
    /// binary's workspace, if present.
    #[arg(long, env = "LEVELRAIL_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// The agent listener and what new nodes run.
    #[command(flatten)]
    pub nodes: NodeArgs,
}

/// Where a service keeps its state.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the database, keys, CA and admin token (created 0700).
    #[arg(long, env = "LEVELRAIL_DATA_DIR", default_value = "levelrail-data")]
    pub data_dir: PathBuf,
    /// The database: `sqlite://PATH` (default: in the data directory) or `postgres://…`.
    /// Never logged.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<SecretString>,
    /// A file holding the database URL (a mounted secret), instead of `DATABASE_URL`.
    #[arg(
        long,
        env = "LEVELRAIL_DATABASE_URL_FILE",
        conflicts_with = "database_url"
    )]
    pub database_url_file: Option<PathBuf>,
}

impl StorageArgs {
    /// The database URL, from the flag, the environment or the file.
    pub fn database_url(&self) -> anyhow::Result<Option<SecretString>> {
        match (&self.database_url, &self.database_url_file) {
            (Some(url), _) => Ok(Some(url.clone())),
            (None, Some(path)) => Ok(Some(read_secret_file(path, "--database-url-file")?)),
            (None, None) => Ok(None),
        }
    }
}

/// The master key from `LEVELRAIL_MASTER_KEY` (base64, 32 bytes), if set, with the key it
/// replaces from `LEVELRAIL_MASTER_KEY_PREVIOUS` while a rotation rolls out. The
/// environment of a process is readable by its owner and root only, unlike its command
/// line. (Rust offers no safe way to clear a variable once threads run, and this
/// workspace forbids `unsafe`: keep the environment of the service's unit private, or use
/// `--master-key-file`.)
pub fn master_key_from_env() -> anyhow::Result<Option<MasterKey>> {
    let previous = env_secret("LEVELRAIL_MASTER_KEY_PREVIOUS")?;
    match env_secret("LEVELRAIL_MASTER_KEY")? {
        None if previous.is_some() => anyhow::bail!(
            "LEVELRAIL_MASTER_KEY_PREVIOUS is set without LEVELRAIL_MASTER_KEY: give the new \
             key in LEVELRAIL_MASTER_KEY"
        ),
        None => Ok(None),
        Some(current) => Ok(Some(MasterKey { current, previous })),
    }
}

/// The previous master key from `LEVELRAIL_MASTER_KEY_PREVIOUS`, if set.
pub fn previous_master_key_from_env() -> anyhow::Result<Option<SecretString>> {
    env_secret("LEVELRAIL_MASTER_KEY_PREVIOUS")
}

fn env_secret(name: &str) -> anyhow::Result<Option<SecretString>> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) => {
            let value = value
                .into_string()
                .map_err(|_| anyhow::anyhow!("{name} is not UTF-8 text"))?;
            Ok(Some(SecretString::from(value)))
        }
    }
}

/// A secret kept in a file (trimmed): never in the process list or the environment.
pub fn read_secret_file(path: &std::path::Path, flag: &str) -> anyhow::Result<SecretString> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    let trimmed = text.trim();
    anyhow::ensure!(
        !trimmed.is_empty(),
        "{flag} {}: the file is empty",
        path.display()
    );
    Ok(SecretString::from(trimmed.to_owned()))
}

/// TLS and browser access of a public listener.
#[derive(Debug, Clone, Args)]
pub struct PublicArgs {
    /// TLS certificate chain (PEM) for the public listener; with `--tls-key`. Without it,
    /// a non-loopback listener gets a certificate from the control-plane CA
    /// (`levelrail-credentials`: its internal certificate from `pki init`).
    #[arg(long, env = "LEVELRAIL_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for `--tls-cert`.
    #[arg(long, env = "LEVELRAIL_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve the public listener over TLS even on loopback (certificate from the CA unless
    /// `--tls-cert` is given).
    #[arg(long)]
    pub tls: bool,
    /// Origins allowed to call the API from a browser (CORS), e.g.
    /// `https://console.example.com`. The web app served by this process needs none.
    #[arg(
        long = "allowed-origin",
        env = "LEVELRAIL_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Maximum concurrent requests on the public listener.
    #[arg(long, env = "LEVELRAIL_MAX_CONCURRENT_REQUESTS", default_value_t = 512)]
    pub max_concurrent_requests: usize,
    /// Calls each API token may make per second, after a burst of 10 seconds' worth; past
    /// it, calls are refused (`RESOURCE_EXHAUSTED` with `Retry-After`). 0: no limit.
    #[arg(long, env = "LEVELRAIL_TOKEN_RATE_LIMIT", default_value_t = 100)]
    pub token_rate_limit: u32,
}

impl PublicArgs {
    /// The request budget of each API token (`None` without a limit).
    pub fn per_token_budget(&self) -> Option<std::sync::Arc<crate::per_ip::Budget<String>>> {
        (self.token_rate_limit > 0).then(|| {
            std::sync::Arc::new(crate::per_ip::Budget::new(
                self.token_rate_limit.saturating_mul(10),
                f64::from(self.token_rate_limit),
                &[],
            ))
        })
    }
}

/// The agent listener, and what provisioned nodes run.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// Agent listener (TLS with a certificate from the control-plane CA).
    #[arg(long, env = "LEVELRAIL_AGENT_LISTEN", default_value = "127.0.0.1:9443")]
    pub agent_listen: SocketAddr,
    /// The address provisioned VMs dial to enroll and download the agent (`host:port` of
    /// the agent listener as seen from the VMs; a DNS name or an IP, which the listener's
    /// certificate always holds). Default: the bound agent address, which provisioning
    /// refuses while it is a wildcard or loopback.
    #[arg(long, env = "LEVELRAIL_AGENT_ADVERTISE")]
    pub agent_advertise: Option<String>,
    /// Accept a loopback `--agent-advertise` (the nodes run on this machine, as in a lab).
    #[arg(long, env = "LEVELRAIL_ALLOW_LOOPBACK_AGENT_ADVERTISE")]
    pub allow_loopback_agent_advertise: bool,
    /// The `levelrail-agent` binary provisioned VMs download, verify and run (repeat it
    /// once per CPU architecture). Default: `levelrail-agent` and `levelrail-agent-<arch>`
    /// (e.g. `levelrail-agent-aarch64`) beside this executable.
    #[arg(
        long = "agent-binary",
        env = "LEVELRAIL_AGENT_BINARIES",
        value_delimiter = ','
    )]
    pub agent_binaries: Vec<PathBuf>,
    /// Run the agent from a registry image instead of the served binary:
    /// `repository@sha256:<digest>` (a digest is required; tags are refused). Build it
    /// with `agent/Containerfile`.
    #[arg(long, env = "LEVELRAIL_AGENT_IMAGE")]
    pub agent_image: Option<String>,
    /// Let the orphan sweeper delete servers carrying this control plane's label whose
    /// provision it does not know (after the grace period); by default they are only
    /// listed (`nodes orphans list`).
    #[arg(long, env = "LEVELRAIL_SWEEP_UNKNOWN_SERVERS")]
    pub sweep_unknown_servers: bool,
    /// How long a provision may take before it fails and is cleaned up (Go duration,
    /// e.g. `20m`).
    #[arg(long, env = "APP_NODE_PROVISION_TIMEOUT")]
    pub provision_timeout: Option<String>,
    /// How long a replica's hold on a provision it drives lasts without renewal (Go
    /// duration; renewed every third of it). When a replica dies, another takes its
    /// provisions over within about twice this.
    #[arg(long, env = "LEVELRAIL_LEASE_TTL", default_value = "30s")]
    pub lease_ttl: String,
    /// How many provisions this process drives at once; a `Provision` beyond it is refused
    /// with `RESOURCE_EXHAUSTED` (retry later) instead of queued.
    #[arg(
        long,
        env = "LEVELRAIL_MAX_PROVISIONS_IN_FLIGHT",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_provisions_in_flight: u32,
}

/// The clouds as this process reaches them.
#[derive(Debug, Clone, Args)]
pub struct CloudArgs {
    /// Subnets to launch AWS instances in, per region (`eu-west-1=subnet-0abc,…`); the
    /// VPC is the subnet's. Regions not named use the default VPC's default subnet.
    #[arg(
        long = "aws-subnet",
        env = "LEVELRAIL_AWS_SUBNETS",
        value_delimiter = ','
    )]
    pub aws_subnets: Vec<String>,
    /// The clouds' API endpoints: `--hetzner-api-url`, `--aws-endpoint-url`,
    /// `--gcp-token-url`, … (one per endpoint a cloud declares).
    #[command(flatten)]
    pub cloud_endpoints: CloudEndpoints,
    /// A PEM file of extra root certificates the Azure and GCP clients trust next to the
    /// system's (a TLS-inspecting proxy, a private endpoint).
    #[arg(long, env = "LEVELRAIL_CLOUD_CA_FILE")]
    pub cloud_ca_file: Option<PathBuf>,
    /// Let AWS credentials that ask for it (`use_ambient_credentials`) use this process's
    /// own AWS identity: its instance profile, role or environment. Off by default: anyone
    /// who may store a credential could otherwise borrow the control plane's identity.
    #[arg(long, env = "LEVELRAIL_ALLOW_AMBIENT_AWS")]
    pub allow_ambient_aws: bool,
    /// The one directory whose files stored credentials may name as token files (Azure's
    /// `federated_token_file`, GCP's `credential_source.file`): where the orchestrator
    /// projects workload-identity tokens. Unset, no token file is read.
    #[arg(long, env = "LEVELRAIL_TOKEN_FILE_DIR", value_name = "DIR")]
    pub token_file_dir: Option<PathBuf>,
}

/// The clouds' API endpoints as given, for proxies, sovereign clouds, private endpoints and
/// tests: one flag and environment variable for each endpoint a cloud declares
/// ([`levelrail_clouds::cloud::Endpoint`]), with the public cloud's URL as its default.
#[derive(Debug, Clone, Default)]
pub struct CloudEndpoints {
    /// The URLs, by cloud and endpoint key.
    pub urls: Vec<(ProviderId, &'static str, String)>,
}

impl clap::FromArgMatches for CloudEndpoints {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let urls = all_clouds()
            .flat_map(|c| c.endpoints.iter().map(move |e| (c.id, e)))
            .filter_map(|(id, e)| {
                let url = matches.get_one::<String>(e.flag)?;
                Some((id, e.key, url.clone()))
            })
            .collect();
        Ok(Self { urls })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for CloudEndpoints {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        all_clouds().flat_map(|c| c.endpoints).fold(cmd, |cmd, e| {
            let arg = clap::Arg::new(e.flag)
                .long(e.flag)
                .env(e.env)
                .value_name("URL")
                .help(e.help);
            cmd.arg(match e.default {
                Some(default) => arg.default_value(default),
                None => arg,
            })
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl CloudArgs {
    /// `--aws-subnet region=subnet-…` pairs, by region.
    pub fn aws_subnet_map(&self) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        self.aws_subnets
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|pair| match pair.trim().split_once('=') {
                Some((region, subnet)) if !region.is_empty() && subnet.starts_with("subnet-") => {
                    Ok((region.trim().to_owned(), subnet.trim().to_owned()))
                }
                _ => anyhow::bail!("--aws-subnet `{pair}`: expected REGION=subnet-ID"),
            })
            .collect()
    }
}

/// `rotate-master-key` options.
#[derive(Debug, Clone, Args)]
pub struct RotateConfig {
    /// The data directory and database of the credentials service.
    #[command(flatten)]
    pub storage: StorageArgs,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Serve {
        #[command(flatten)]
        serve: ServeConfig,
    }

    #[test]
    fn the_master_key_is_no_flag_and_the_admin_token_file_is_asked_for() {
        let refused = Serve::try_parse_from(["serve", "--master-key-from-env", "a2V5"])
            .expect_err("a key on the command line is in the process list");
        assert_eq!(refused.kind(), clap::error::ErrorKind::UnknownArgument);
        let parsed = Serve::try_parse_from(["serve"]).expect("parses");
        assert!(parsed.serve.master_key.is_none());
        assert!(!parsed.serve.write_admin_token);
        let parsed = Serve::try_parse_from(["serve", "--write-admin-token"]).expect("parses");
        assert!(parsed.serve.write_admin_token);
    }

    #[test]
    fn demo_full_regions_take_a_comma_separated_list_and_need_demo() {
        let parsed = Serve::try_parse_from([
            "serve",
            "--demo",
            "--demo-full-regions",
            "fsn1,nyc1,us-east-1",
        ])
        .expect("parses");
        assert_eq!(
            parsed.serve.demo_full_regions,
            ["fsn1", "nyc1", "us-east-1"]
        );
        let refused = Serve::try_parse_from(["serve", "--demo-full-regions", "fsn1"])
            .expect_err("needs --demo");
        assert!(refused.to_string().contains("--demo"), "{refused}");
    }

    #[test]
    fn every_cloud_endpoint_has_a_flag_with_the_public_default() {
        let parsed = Serve::try_parse_from(["serve", "--hetzner-api-url", "http://127.0.0.1:1/v1"])
            .expect("parses");
        let urls = &parsed.serve.clouds.cloud_endpoints.urls;
        assert!(urls.contains(&(ProviderId::Hetzner, "api", "http://127.0.0.1:1/v1".into())));
        assert!(urls.contains(&(
            ProviderId::Gcp,
            "token",
            "https://oauth2.googleapis.com/token".into()
        )));
        // No default: AWS's regional endpoints are the client's own.
        assert!(!urls.iter().any(|(id, _, _)| *id == ProviderId::Aws));
        let flags = all_clouds().flat_map(|c| c.endpoints).count();
        assert_eq!(flags, 14, "the endpoint flags of the five clouds");
    }
}
