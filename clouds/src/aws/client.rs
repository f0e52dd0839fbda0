//! Building the SDK clients: one rustls (ring) HTTP client for the process, SigV4 signing
//! with the grant's session credentials, an EC2 client per region (cached), the STS client,
//! endpoint overrides (a fake, moto, a VPC endpoint or proxy), and retries / timeouts from
//! the provisioner's `RetryPolicy`. Every call first takes a token from the credential's
//! shared rate limiter.
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_sdk_ec2::config::retry::RetryConfig;
use aws_sdk_ec2::config::timeout::TimeoutConfig;
use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region, SharedHttpClient};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use secrecy::ExposeSecret as _;

use crate::http::RetryPolicy;
use crate::ratelimit::RateLimiter;
use crate::registry::AwsKeys;

/// The one region serving the Price List Query API for every region (besides
/// `eu-central-1` and `ap-south-1`).
const PRICING_REGION: &str = "us-east-1";

/// Where the AWS APIs are and what the provider may choose on its own.
#[derive(Debug, Clone)]
pub struct AwsSettings {
    /// EC2 endpoint for every region (`None`: AWS's regional endpoints).
    pub ec2_endpoint: Option<String>,
    /// STS endpoint (`None`: AWS's regional STS endpoint).
    pub sts_endpoint: Option<String>,
    /// Price List Query API endpoint (`None`: AWS's, in `us-east-1`).
    pub pricing_endpoint: Option<String>,
    /// Operator-named subnets, by region (`eu-west-1` → `subnet-…`); the VPC is the
    /// subnet's. Regions without one use the default VPC and its default subnets, one zone
    /// after another while a zone has no capacity.
    pub subnets: BTreeMap<String, String>,
    /// How long a delete waits for the network interface of a terminated instance to be
    /// released before it deletes the dedicated security group.
    pub release_timeout: Duration,
    /// Pause between two checks while waiting.
    pub poll_interval: Duration,
}

impl Default for AwsSettings {
    fn default() -> Self {
        Self {
            ec2_endpoint: None,
            sts_endpoint: None,
            pricing_endpoint: None,
            subnets: BTreeMap::new(),
            release_timeout: Duration::from_secs(300),
            poll_interval: Duration::from_secs(5),
        }
    }
}

/// The process-wide HTTPS client (rustls with ring; plain HTTP for local endpoints).
pub fn http_client() -> SharedHttpClient {
    static CLIENT: OnceLock<SharedHttpClient> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            aws_smithy_http_client::Builder::new()
                .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
                .build_https()
        })
        .clone()
}

/// The SDK clients of one grant.
#[derive(Debug)]
pub(super) struct Clients {
    credentials: Credentials,
    pub(super) default_region: String,
    pub(super) settings: AwsSettings,
    limiter: Arc<RateLimiter>,
    policy: RetryPolicy,
    ec2: Mutex<HashMap<String, aws_sdk_ec2::Client>>,
}

impl Clients {
    pub(super) fn new(
        keys: &AwsKeys,
        default_region: &str,
        settings: AwsSettings,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Self {
        let credentials = Credentials::new(
            keys.access_key_id.clone(),
            keys.secret_access_key.expose_secret().to_owned(),
            keys.session_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            None,
            "levelrail-grant",
        );
        Self {
            credentials,
            default_region: default_region.to_owned(),
            settings,
            limiter,
            policy,
            ec2: Mutex::new(HashMap::new()),
        }
    }

    fn retry(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.policy.max_attempts.max(1))
            .with_initial_backoff(self.policy.base_backoff)
            .with_max_backoff(self.policy.max_backoff)
    }

    fn timeouts(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(10))
            .operation_attempt_timeout(self.policy.timeout)
            .build()
    }

    /// The EC2 client of `region`, after taking a token from the rate limiter.
    pub(super) async fn ec2(&self, region: &str) -> aws_sdk_ec2::Client {
        self.limiter.acquire().await;
        let mut map = self.ec2.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(region.to_owned())
            .or_insert_with(|| {
                let mut b = aws_sdk_ec2::Config::builder()
                    .behavior_version(BehaviorVersion::latest())
                    .region(Region::new(region.to_owned()))
                    .credentials_provider(self.credentials.clone())
                    .http_client(http_client())
                    .retry_config(self.retry())
                    .timeout_config(self.timeouts());
                if let Some(url) = &self.settings.ec2_endpoint {
                    b = b.endpoint_url(url.clone());
                }
                aws_sdk_ec2::Client::from_conf(b.build())
            })
            .clone()
    }

    /// The STS client (default region), after taking a token from the rate limiter.
    pub(super) async fn sts(&self) -> aws_sdk_sts::Client {
        self.limiter.acquire().await;
        let mut b = aws_sdk_sts::Config::builder()
            .behavior_version(aws_sdk_sts::config::BehaviorVersion::latest())
            .region(aws_sdk_sts::config::Region::new(
                self.default_region.clone(),
            ))
            .credentials_provider(self.credentials.clone())
            .http_client(http_client())
            .retry_config(self.retry())
            .timeout_config(self.timeouts());
        if let Some(url) = &self.settings.sts_endpoint {
            b = b.endpoint_url(url.clone());
        }
        aws_sdk_sts::Client::from_conf(b.build())
    }

    /// The Price List Query API client (served in `us-east-1` only, for every region),
    /// after taking a token from the rate limiter.
    pub(super) async fn pricing(&self) -> aws_sdk_pricing::Client {
        self.limiter.acquire().await;
        let mut b = aws_sdk_pricing::Config::builder()
            .behavior_version(aws_sdk_pricing::config::BehaviorVersion::latest())
            .region(aws_sdk_pricing::config::Region::new(PRICING_REGION))
            .credentials_provider(self.credentials.clone())
            .http_client(http_client())
            .retry_config(self.retry())
            .timeout_config(self.timeouts());
        if let Some(url) = &self.settings.pricing_endpoint {
            b = b.endpoint_url(url.clone());
        }
        aws_sdk_pricing::Client::from_conf(b.build())
    }
}
