//! `levelrail-cli nodes provision`: asks the control plane to create a server at a provider
//! and enroll it as a node, over `ProvisionerService.Provision`. Every flag is checked
//! locally first; the call carries a fresh `request_id`, so the retry after a transient
//! failure returns the same provision instead of creating a second server. With `--watch`
//! the command goes on as `nodes provisions watch`.
mod keys;

use std::time::Duration;

use clap::{Args, ValueEnum};
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_proto::provisioner::v1::{Provision, ProvisionRequest, Role};
use serde_json::json;
use tonic::Code;

use crate::commands::provisions::{render, watch};
use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::{provider, validate};

/// Attempts of the Provision call when the control plane is briefly unavailable.
const ATTEMPTS: u32 = 3;
/// The delay before the second attempt; it doubles before the third.
const RETRY_DELAY: Duration = Duration::from_millis(250);

/// What the node will run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RoleArg {
    /// Accepts apps.
    General,
    /// Accepts builds.
    Build,
}

/// The flags of `nodes provision`.
#[derive(Debug, Args)]
pub(crate) struct ProvisionArgs {
    /// The provider: hetzner, digitalocean, aws, azure or gcp.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,

    /// The provider's region or zone id (fsn1, nyc3, us-east-1, westeurope, europe-west1-b).
    /// A comma-separated list names alternatives, tried in order when the provider has no
    /// capacity (fsn1,nbg1): every size is tried in a region before the next region.
    #[arg(long, value_name = "REGION[,REGION…]")]
    region: Option<String>,

    /// The provider's size id (cx22, s-1vcpu-1gb, t3.micro, Standard_B2s, e2-medium), or a
    /// comma-separated list of alternatives tried in order (cx22,cx32).
    #[arg(long, value_name = "SIZE[,SIZE…]")]
    size: Option<String>,

    /// The node name: lowercase letters, digits and hyphens, starting with a letter, at most
    /// 63 characters, not ending with a hyphen.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// What the node will run.
    #[arg(long, value_enum, default_value_t = RoleArg::General)]
    role: RoleArg,

    /// host:port the agent dials to enroll. Default: the control plane's configured agent
    /// address.
    #[arg(long, value_name = "HOST:PORT")]
    control_plane_addr: Option<String>,

    /// An OpenSSH public key to install, or @FILE for every key in a file (such as
    /// @~/.ssh/id_ed25519.pub). Repeatable.
    #[arg(
        long = "ssh-public-key",
        visible_alias = "ssh-key",
        value_name = "KEY|@FILE"
    )]
    ssh_public_keys: Vec<String>,

    /// Open TCP 22 to this CIDR only (for example 203.0.113.7/32). Without it the server
    /// has no inbound rule at all.
    #[arg(long, value_name = "CIDR", conflicts_with = "allow_ssh_inbound")]
    ssh_source_cidr: Option<String>,

    /// Open TCP 22 to any IPv4 source (the same as --ssh-source-cidr 0.0.0.0/0). Prefer
    /// --ssh-source-cidr with your own address.
    #[arg(long)]
    allow_ssh_inbound: bool,

    /// Override the provider's default image (for example ubuntu-24.04 on Hetzner).
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,

    /// Keep the server and its resources when the provision fails, for debugging (they
    /// keep billing until deleted).
    #[arg(long)]
    keep_on_failure: bool,

    /// Follow the provision live, as `nodes provisions watch` does (exit 1 if it fails).
    #[arg(long)]
    watch: bool,
}

/// Runs `nodes provision`.
pub(crate) async fn run(
    args: ProvisionArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    let request = build_request(&args, ctx)?;
    let provision = call_provision(request, ctx).await?;
    let id = provision.id.clone();
    let mut shown = watch::Shown::default();
    if ctx.json() {
        let doc = json!({ "provision": render::provision_json(&provision) });
        if args.watch {
            // One JSON line per state, this one included; the watch skips its generation.
            ctx.print_json_line(&doc)?;
            shown.mark(&provision);
        } else {
            ctx.print_json(&doc)?;
        }
    } else {
        ctx.print(&format!(
            "provision {id} created, status: {}",
            render::status_name(provision.status)
        ))?;
        if !args.watch {
            ctx.print(&format!(
                "follow with: levelrail-cli nodes provisions watch {id}"
            ))?;
        }
    }
    if !args.watch {
        return Ok(Outcome::Success);
    }
    watch::follow(&id, ctx, &mut shown, watch::DEFAULT_BACKOFF).await
}

/// Validates every flag and builds the request with a fresh idempotency key.
fn build_request(
    args: &ProvisionArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<ProvisionRequest, CliError> {
    let provider = provider::parse(args.provider.as_deref())?;
    let required = |flag: &str, value: &Option<String>| -> Result<String, CliError> {
        let value = value.as_deref().map(str::trim).unwrap_or_default();
        if value.is_empty() {
            return Err(CliError::usage(format!("{flag} is required")));
        }
        Ok(value.to_owned())
    };
    let (region, fallback_regions) = choices("--region", &required("--region", &args.region)?)?;
    let (size, fallback_sizes) = choices("--size", &required("--size", &args.size)?)?;
    let name = required("--name", &args.name)?;
    validate::node_name("--name", &name)?;
    let control_plane_addr = args.control_plane_addr.clone().unwrap_or_default();
    if !control_plane_addr.is_empty() {
        validate::host_port("--control-plane-addr", &control_plane_addr)?;
    }
    let ssh_source_cidr = match (&args.ssh_source_cidr, args.allow_ssh_inbound) {
        (Some(cidr), _) => {
            validate::cidr("--ssh-source-cidr", cidr)?;
            cidr.clone()
        }
        (None, true) => {
            ctx.warn(
                "--allow-ssh-inbound opens TCP 22 to the whole internet; prefer \
                 --ssh-source-cidr <your address>/32",
            )?;
            "0.0.0.0/0".to_owned()
        }
        (None, false) => String::new(),
    };
    let image = args.image.clone().unwrap_or_default();
    if args.image.is_some() {
        validate::identifier("--image", &image)?;
    }
    let ssh_public_keys = keys::collect(&args.ssh_public_keys)?;
    Ok(ProvisionRequest {
        provider: provider as i32,
        region,
        size,
        name,
        role: match args.role {
            RoleArg::General => Role::General,
            RoleArg::Build => Role::Build,
        } as i32,
        ssh_public_keys,
        ssh_source_cidr,
        image,
        control_plane_addr,
        request_id: uuid::Uuid::new_v4().to_string(),
        keep_on_failure: args.keep_on_failure,
        fallback_regions,
        fallback_sizes,
    })
}

/// Most alternatives a list flag may add to its first choice (the server's limit).
const MAX_FALLBACKS: usize = 4;

/// A comma-separated list of ids: the first choice and its alternatives, in order.
fn choices(flag: &str, value: &str) -> Result<(String, Vec<String>), CliError> {
    let mut ids = Vec::new();
    for id in value.split(',').map(str::trim) {
        validate::identifier(flag, id)?;
        ids.push(id.to_owned());
    }
    if ids.len() > MAX_FALLBACKS + 1 {
        return Err(CliError::usage(format!(
            "{flag} names at most {} choices",
            MAX_FALLBACKS + 1
        )));
    }
    let first = ids.remove(0);
    Ok((first, ids))
}

/// Calls Provision, retrying with the same request (so the same `request_id`) while the
/// control plane is unavailable: the server returns the original provision for a repeated
/// key, so a retry never creates a second server.
async fn call_provision(
    request: ProvisionRequest,
    ctx: &mut Context<'_, '_>,
) -> Result<Provision, CliError> {
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let mut attempt = 1;
    loop {
        match client.provision(request.clone()).await {
            Ok(response) => {
                return response
                    .into_inner()
                    .provision
                    .ok_or_else(|| CliError::failed("the server returned no provision"));
            }
            Err(status)
                if attempt < ATTEMPTS
                    && matches!(status.code(), Code::Unavailable | Code::DeadlineExceeded) =>
            {
                let delay = RETRY_DELAY.saturating_mul(1 << (attempt - 1));
                ctx.warn(&format!(
                    "the control plane is unavailable ({}); retrying the same request in {}",
                    status.message(),
                    crate::duration::format(delay)
                ))?;
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(status) => return Err(ctx.rpc_error(&status)),
        }
    }
}
