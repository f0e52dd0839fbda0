//! Amazon EC2 through `aws-sdk-ec2` / `aws-sdk-sts` (rustls with ring, SigV4 with the
//! broker's session credentials): regions with their console names, live sizes (the
//! region's offered x86_64 and arm64 types), idempotent instance creation (a `ClientToken`
//! per provision and subnet, adoption by tag) that moves on to the next zone when one has
//! no capacity, a zero-ingress shared security group or an opted-in SSH group, the
//! operator's key as a key pair, deletion that waits for the network interface before
//! removing the dedicated group and key pair, listing by tag in every region, and a probe
//! made of `GetCallerIdentity` and `DryRun`s of the actions that change anything.
//!
//! Server ids are `<region>/<instance id>`: an instance lives in the region it was created
//! in, which need not be the credential's default region.
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_ec2::types::{Instance, InstanceType};
use levelrail_types::PermissionCheck;
use tokio::task::JoinSet;

use super::cloud::{Cloud, Endpoint, Settings};
use super::http::RetryPolicy;
use super::pricing::{self, PriceRead};
use super::ratelimit::{Bucket, RateLimiter};
use super::registry::{AwsKeys, ClientParts, ProviderSpec};
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, PollTarget, ProviderError,
    ProviderId, Reason, Region, ServerInfo, ServerState, Size,
};

mod catalog;
mod client;
mod create;
mod delete;
mod errors;
mod groups;
mod network;
mod prices;
mod probe;
mod sizes;
mod tags;

pub use client::{AwsSettings, http_client};
pub use create::{CANONICAL_OWNER, UBUNTU_2404, UBUNTU_2404_ARM64};

use client::Clients;
use errors::{classify, invalid};
use tags::{filter, tag_filter};

/// Used by the probe when no Ubuntu image is found (a `DryRun` needs some image id).
const PROBE_IMAGE: &str = "ami-00000000000000000";

/// AWS in the table of clouds.
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::Aws,
    endpoints: &[
        Endpoint {
            key: "ec2",
            flag: "aws-endpoint-url",
            env: "LEVELRAIL_AWS_ENDPOINT_URL",
            default: None,
            help: "AWS EC2 endpoint for every region (proxies, VPC endpoints, tests, moto). \
                   Default: AWS's regional endpoints",
        },
        Endpoint {
            key: "sts",
            flag: "aws-sts-url",
            env: "LEVELRAIL_AWS_STS_URL",
            default: None,
            help: "AWS STS endpoint (token exchange and identity checks). Default: AWS's \
                   regional STS endpoint",
        },
        Endpoint {
            key: "pricing",
            flag: "aws-pricing-url",
            env: "LEVELRAIL_AWS_PRICING_URL",
            default: None,
            help: "AWS Price List Query API endpoint (instance prices). Default: AWS's \
                   endpoint in us-east-1",
        },
    ],
    reason: errors::reason,
    spec,
};

/// The grant carries AWS keys instead of a bearer token; the client resolves its endpoint
/// per region, unless `settings` names one.
fn spec(settings: &Settings) -> ProviderSpec {
    let defaults = AwsSettings::default();
    let aws = AwsSettings {
        ec2_endpoint: settings.url(ProviderId::Aws, "ec2"),
        sts_endpoint: settings.url(ProviderId::Aws, "sts"),
        pricing_endpoint: settings.url(ProviderId::Aws, "pricing"),
        subnets: settings.subnets.clone(),
        release_timeout: settings.wait_limit.unwrap_or(defaults.release_timeout),
        poll_interval: settings.poll_interval.unwrap_or(defaults.poll_interval),
    };
    ProviderSpec {
        // Named for logs and `Debug`.
        base_url: aws
            .ec2_endpoint
            .clone()
            .unwrap_or_else(|| "https://ec2.<region>.amazonaws.com".into()),
        construct: Arc::new(move |p: ClientParts<'_>| {
            let keys = p.access.aws(ProviderId::Aws)?;
            let client = AwsProvider::new(
                keys,
                p.context.region.as_deref(),
                aws.clone(),
                p.limiter,
                p.policy,
            )?;
            Ok(Arc::new(client) as Arc<dyn CloudProvider>)
        }),
        limiter: rate_limiter,
    }
}

/// How long the probe waits for its Price List read.
const PROBE_PRICE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// EC2's own request-rate buckets for mutating calls: a burst of 50, refilling 5 a second.
pub fn rate_limiter() -> RateLimiter {
    RateLimiter::new(&[Bucket {
        capacity: 50.0,
        refill_per_sec: 5.0,
    }])
}

/// EC2 and STS, seen with one grant.
#[derive(Debug)]
pub struct AwsProvider {
    clients: Arc<Clients>,
}

impl AwsProvider {
    /// A client signing with `keys`, acting in `default_region` (`us-east-1` when the
    /// credential names none) unless a call names another, sharing `limiter` with every
    /// client of the same credential.
    pub fn new(
        keys: &AwsKeys,
        default_region: Option<&str>,
        settings: AwsSettings,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        if keys.access_key_id.trim().is_empty() {
            return Err(invalid("no_credentials", "the AWS grant has no access key"));
        }
        let region = match default_region.map(str::trim) {
            Some("") => return Err(invalid("invalid_region", "the grant names an empty region")),
            Some(region) => region,
            None => "us-east-1",
        };
        Ok(Self {
            clients: Arc::new(Clients::new(keys, region, settings, limiter, policy)),
        })
    }

    /// Live instances of provision `pid` in `region`, oldest first.
    async fn provision_instances(
        &self,
        region: &str,
        pid: &str,
    ) -> Result<Vec<Instance>, ProviderError> {
        create::provision_instances(self, region, pid).await
    }

    /// The ids of the regions enabled for the account.
    async fn region_ids(&self) -> Result<Vec<String>, ProviderError> {
        let out = self
            .clients
            .ec2(&self.clients.default_region)
            .await
            .describe_regions()
            .send()
            .await
            .map_err(classify)?;
        let mut ids: Vec<String> = out
            .regions()
            .iter()
            .filter(|r| r.opt_in_status() != Some("not-opted-in"))
            .filter_map(|r| r.region_name().map(str::to_owned))
            .collect();
        ids.sort();
        Ok(ids)
    }
}

#[async_trait]
impl CloudProvider for AwsProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Aws
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        Ok(self
            .region_ids()
            .await?
            .iter()
            .map(|id| catalog::region(id))
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        let region = region.trim();
        if region.is_empty() {
            return Err(invalid(
                "invalid_input",
                "a region is required to list instance types",
            ));
        }
        sizes::sizes(&self.clients, region).await
    }

    async fn list_prices(&self, region: &str, sizes: &[Size]) -> Option<PriceRead> {
        let region = region.trim();
        let read = prices::prices(&self.clients, region).await;
        Some(pricing::complete(read, sizes, prices::WHAT, region))
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        create::create_server(self, req).await
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        let (region, instance) = parse_id(id, &self.clients.default_region)?;
        let out = self
            .clients
            .ec2(&region)
            .await
            .describe_instances()
            .instance_ids(&instance)
            .send()
            .await
            .map_err(classify)?;
        out.reservations()
            .iter()
            .flat_map(|r| r.instances())
            .find(|i| i.instance_id() == Some(instance.as_str()))
            .map(|i| server_info(&region, i))
            .ok_or_else(|| {
                ProviderError::new(
                    ProviderId::Aws,
                    ErrorKind::NotFound,
                    "InvalidInstanceID.NotFound",
                    &format!("instance {instance} does not exist in {region}"),
                )
            })
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        delete::delete_provision_resources(self, server, ownership).await
    }

    /// `DescribeInstances` filtered by `instance-id` (a filter, unlike `InstanceIds`, does
    /// not fail the whole call for one id that is gone), up to 100 ids of one region.
    fn poll_batch(&self) -> usize {
        100
    }

    fn poll_group(&self, server_id: &str) -> Option<String> {
        parse_id(server_id, &self.clients.default_region)
            .ok()
            .map(|(region, _)| region)
    }

    async fn poll_servers(
        &self,
        _control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        let mut region = None;
        let mut ids = Vec::with_capacity(targets.len());
        for t in targets {
            let (r, instance) = parse_id(&t.server_id, &self.clients.default_region)?;
            if region.as_ref().is_some_and(|first| *first != r) {
                return Err(invalid(
                    "invalid_id",
                    "one poll reads the instances of one region",
                ));
            }
            region = Some(r);
            ids.push(instance);
        }
        let Some(region) = region else {
            return Ok(Vec::new());
        };
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let ec2 = self.clients.ec2(&region).await;
        described(&ec2, &region, &[filter("instance-id", &ids)]).await
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let mut tasks = JoinSet::new();
        for region in self.region_ids().await? {
            let (clients, cp) = (self.clients.clone(), control_plane.to_owned());
            tasks.spawn(tagged(clients, region, cp));
        }
        let mut servers = Vec::new();
        while let Some(done) = tasks.join_next().await {
            let found = done.map_err(|e| {
                ProviderError::new(ProviderId::Aws, ErrorKind::Other, "task", &e.to_string())
            })??;
            servers.extend(found);
        }
        servers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(servers)
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        let who = self
            .clients
            .sts()
            .await
            .get_caller_identity()
            .send()
            .await
            .map_err(classify)?;
        let account = who.account().unwrap_or_default().to_owned();
        let arn = who.arn().unwrap_or_default().to_owned();
        let region = self.clients.default_region.clone();
        let image = match create::image(self, &region, None, levelrail_types::CpuArch::X86_64).await
        {
            Ok(i) => i.image_id().unwrap_or(PROBE_IMAGE).to_owned(),
            Err(e) if e.kind == ErrorKind::InvalidRequest => PROBE_IMAGE.to_owned(),
            Err(e) => return Err(e),
        };
        let dry = self
            .clients
            .ec2(&region)
            .await
            .run_instances()
            .dry_run(true)
            .image_id(image)
            .instance_type(InstanceType::T3Micro)
            .min_count(1)
            .max_count(1)
            .send()
            .await
            .map_err(classify);
        let can_write = match dry {
            Err(e) if e.reason == Reason::DryRunPassed => true,
            Err(e) if e.kind == ErrorKind::Unauthorized => false,
            Err(e) => return Err(e),
            Ok(out) => {
                // A cloud that ignored DryRun: never leave the instance behind.
                let ids: Vec<String> = out
                    .instances()
                    .iter()
                    .filter_map(|i| i.instance_id().map(str::to_owned))
                    .collect();
                self.clients
                    .ec2(&region)
                    .await
                    .terminate_instances()
                    .set_instance_ids(Some(ids))
                    .send()
                    .await
                    .map_err(classify)?;
                true
            }
        };
        let dry = probe::dry_run_actions(&self.clients, &region).await;
        let mut missing: Vec<&str> = dry.missing.clone();
        if !can_write {
            missing.insert(0, "ec2:RunInstances");
        }
        let mut message = if missing.is_empty() {
            format!(
                "{arn} may launch instances in {region} (RunInstances and {} more actions proven with DryRun)",
                dry.checked
            )
        } else {
            format!(
                "{arn} is not allowed to call {} in {region}: attach the policy from the README",
                missing.join(", ")
            )
        };
        if !dry.unverified.is_empty() {
            let list: Vec<String> = dry
                .unverified
                .iter()
                .map(|(a, code)| format!("{a} ({code})"))
                .collect();
            message.push_str(&format!("; not proven by a dry run: {}", list.join(", ")));
        }
        // Prices are not needed to provision: a refusal is told, not a failure.
        let read = tokio::time::timeout(PROBE_PRICE_WAIT, prices::check(&self.clients, &region));
        let (unpriced, priced) = match read.await {
            Ok(Ok(())) => (None, Some(true)),
            Ok(Err(e)) if e.kind == ErrorKind::Unauthorized => (
                Some(format!(
                    "the Price List refused this identity ({}): allow pricing:GetProducts",
                    e.code
                )),
                Some(false),
            ),
            Ok(Err(e)) => (
                Some(format!("the Price List failed: {} ({})", e.message, e.code)),
                None,
            ),
            Err(_) => (
                Some(format!(
                    "the Price List did not answer within {} s",
                    PROBE_PRICE_WAIT.as_secs()
                )),
                None,
            ),
        };
        if let Some(why) = unpriced {
            message.push_str(&format!("; sizes will show \"price unavailable\": {why}"));
        }
        // Proven, or not: refused, or a dry run that answered something else (named with its
        // code in the message).
        let mut permissions = vec![
            PermissionCheck {
                name: "sts:GetCallerIdentity".into(),
                granted: true,
            },
            PermissionCheck {
                name: "ec2:RunInstances".into(),
                granted: can_write,
            },
        ];
        permissions.extend(PermissionCheck::of(dry.proven.iter().copied(), &[]));
        permissions.extend(
            dry.missing
                .iter()
                .copied()
                .chain(dry.unverified.iter().map(|(action, _)| *action))
                .map(|name| PermissionCheck {
                    name: name.to_owned(),
                    granted: false,
                }),
        );
        permissions.extend(priced.map(|granted| PermissionCheck {
            name: "pricing:GetProducts".into(),
            granted,
        }));
        Ok(CapabilityReport {
            can_write: missing.is_empty(),
            account,
            message,
            permissions,
        })
    }
}

/// Live instances tagged for control plane `cp` in `region`.
async fn tagged(
    clients: Arc<Clients>,
    region: String,
    cp: String,
) -> Result<Vec<ServerInfo>, ProviderError> {
    let ec2 = clients.ec2(&region).await;
    let filters = [
        tag_filter(tags::CONTROL_PLANE, &cp),
        filter("instance-state-name", &create::LIVE_STATES),
    ];
    described(&ec2, &region, &filters).await
}

/// Every instance of `region` matching `filters`, page by page.
async fn described(
    ec2: &aws_sdk_ec2::Client,
    region: &str,
    filters: &[aws_sdk_ec2::types::Filter],
) -> Result<Vec<ServerInfo>, ProviderError> {
    let mut out = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let page = ec2
            .describe_instances()
            .set_filters(Some(filters.to_vec()))
            .set_next_token(next.take())
            .send()
            .await
            .map_err(classify)?;
        out.extend(
            page.reservations()
                .iter()
                .flat_map(|r| r.instances())
                .map(|i| server_info(region, i)),
        );
        match page.next_token() {
            Some(t) if !t.is_empty() => next = Some(t.to_owned()),
            _ => return Ok(out),
        }
    }
}

/// `<region>/<instance id>`, or a bare instance id in `default_region`.
fn parse_id(id: &str, default_region: &str) -> Result<(String, String), ProviderError> {
    let id = id.trim();
    let (region, instance) = id.split_once('/').unwrap_or((default_region, id));
    if !instance.starts_with("i-") || region.is_empty() || instance.len() > 64 {
        return Err(invalid(
            "invalid_id",
            &format!("`{}` is not an EC2 instance id", super::error::clip(id)),
        ));
    }
    Ok((region.to_owned(), instance.to_owned()))
}

/// EC2 instance states, mapped.
fn state_of(state: &str) -> ServerState {
    match state {
        "running" => ServerState::Running,
        "pending" | "" => ServerState::Pending,
        // shutting-down, terminated, stopping, stopped.
        _ => ServerState::Failed,
    }
}

fn server_info(region: &str, i: &Instance) -> ServerInfo {
    let instance = i.instance_id().unwrap_or_default();
    let state = i
        .state()
        .and_then(|s| s.name())
        .map(|n| n.as_str().to_owned())
        .unwrap_or_default();
    ServerInfo {
        id: format!("{region}/{instance}"),
        name: tags::value(i.tags(), "Name").unwrap_or(instance).to_owned(),
        state: state_of(&state),
        provider_state: state,
        ipv4: i
            .public_ip_address()
            .filter(|ip| !ip.is_empty())
            .map(str::to_owned),
        provision_id: tags::value(i.tags(), tags::PROVISION).map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_to_the_three_states() {
        assert_eq!(state_of("pending"), ServerState::Pending);
        assert_eq!(state_of("running"), ServerState::Running);
        for s in ["shutting-down", "terminated", "stopping", "stopped"] {
            assert_eq!(state_of(s), ServerState::Failed, "{s}");
        }
    }

    #[test]
    fn ids_carry_their_region() {
        assert_eq!(
            parse_id("eu-west-1/i-0abc", "us-east-1").ok(),
            Some(("eu-west-1".into(), "i-0abc".into()))
        );
        assert_eq!(
            parse_id("i-0abc", "us-east-1").ok(),
            Some(("us-east-1".into(), "i-0abc".into()))
        );
        assert_eq!(
            parse_id("42", "us-east-1").map_err(|e| e.kind),
            Err(ErrorKind::InvalidRequest)
        );
    }
}
