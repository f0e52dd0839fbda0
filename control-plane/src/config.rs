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
    /// AWS EC2 endpoint for every region (proxies, VPC endpoints, tests, moto). Default:
    /// AWS's regional endpoints.
    #[arg(long, env = "LEVELRAIL_AWS_ENDPOINT_URL")]
    pub aws_endpoint_url: Option<String>,
    /// AWS STS endpoint (token exchange and identity checks). Default: AWS's regional
    /// STS endpoint.
    #[arg(long, env = "LEVELRAIL_AWS_STS_URL")]
    pub aws_sts_url: Option<String>,
    /// Subnets to launch AWS instances in, per region (`eu-west-1=subnet-0abc,…`); the
    /// VPC is the subnet's. Regions not named use the default VPC's default subnet.
    #[arg(
        long = "aws-subnet",
        env = "LEVELRAIL_AWS_SUBNETS",
        value_delimiter = ','
    )]
    pub aws_subnets: Vec<String>,
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
    /// Maximum concurrent requests on the public listener.
    #[arg(long, default_value_t = 512)]
    pub max_concurrent_requests: usize,
    /// Azure and GCP token endpoints and APIs.
    #[command(flatten)]
    pub azure_gcp: AzureGcpEndpoints,
}

/// Where the Azure and GCP token endpoints and APIs live (proxies, sovereign clouds, private
/// endpoints, tests). The defaults are the public clouds.
#[derive(Debug, Clone, Args)]
pub struct AzureGcpEndpoints {
    /// Azure AD authority; tokens come from `<authority>/<tenant>/oauth2/v2.0/token`.
    #[arg(
        long,
        env = "LEVELRAIL_AZURE_AUTHORITY_URL",
        default_value = "https://login.microsoftonline.com"
    )]
    pub azure_authority_url: String,
    /// Azure Resource Manager base URL.
    #[arg(
        long,
        env = "LEVELRAIL_AZURE_ARM_URL",
        default_value = "https://management.azure.com"
    )]
    pub azure_arm_url: String,
    /// Google OAuth token endpoint (service-account keys).
    #[arg(
        long,
        env = "LEVELRAIL_GCP_TOKEN_URL",
        default_value = "https://oauth2.googleapis.com/token"
    )]
    pub gcp_token_url: String,
    /// Google STS token endpoint (workload identity federation).
    #[arg(
        long,
        env = "LEVELRAIL_GCP_STS_URL",
        default_value = "https://sts.googleapis.com/v1/token"
    )]
    pub gcp_sts_url: String,
    /// Google IAM Credentials base URL (service-account impersonation after federation).
    #[arg(
        long,
        env = "LEVELRAIL_GCP_IAM_CREDENTIALS_URL",
        default_value = "https://iamcredentials.googleapis.com"
    )]
    pub gcp_iam_credentials_url: String,
    /// Compute Engine v1 base URL.
    #[arg(
        long,
        env = "LEVELRAIL_GCP_COMPUTE_URL",
        default_value = "https://compute.googleapis.com/compute/v1"
    )]
    pub gcp_compute_url: String,
    /// Cloud Resource Manager v3 base URL (the probe's `projects.testIamPermissions`).
    #[arg(
        long,
        env = "LEVELRAIL_GCP_RESOURCE_MANAGER_URL",
        default_value = "https://cloudresourcemanager.googleapis.com/v3"
    )]
    pub gcp_resource_manager_url: String,
    /// A PEM file of extra root certificates the Azure and GCP clients trust next to the
    /// system's (a TLS-inspecting proxy, a private endpoint).
    #[arg(long, env = "LEVELRAIL_CLOUD_CA_FILE")]
    pub cloud_ca_file: Option<PathBuf>,
}

impl Default for AzureGcpEndpoints {
    /// The public clouds (the flags' defaults).
    fn default() -> Self {
        Self {
            azure_authority_url: "https://login.microsoftonline.com".into(),
            azure_arm_url: "https://management.azure.com".into(),
            gcp_token_url: "https://oauth2.googleapis.com/token".into(),
            gcp_sts_url: "https://sts.googleapis.com/v1/token".into(),
            gcp_iam_credentials_url: "https://iamcredentials.googleapis.com".into(),
            gcp_compute_url: "https://compute.googleapis.com/compute/v1".into(),
            gcp_resource_manager_url: "https://cloudresourcemanager.googleapis.com/v3".into(),
            cloud_ca_file: None,
        }
    }
}

impl ServeConfig {
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
    /// The data directory of the control plane.
    #[arg(long, env = "LEVELRAIL_DATA_DIR", default_value = "levelrail-data")]
    pub data_dir: PathBuf,
    /// Database URL, when not the SQLite file in the data directory.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<SecretString>,
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
}
