//! `levelrail-cli nodes provisions list|show|watch|cancel|retry`: provisions already started, over
//! `ProvisionerService`. Rendering is in `render`, the live view in `watch`.
pub(crate) mod render;
pub(crate) mod watch;

use std::time::Duration;

use clap::{Args, Subcommand};
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_proto::provisioner::v1::{
    CancelProvisionRequest, GetProvisionRequest, ListProvisionsRequest, Provision,
    RetryProvisionRequest,
};
use serde_json::{Value, json};

use crate::context::Context;
use crate::duration;
use crate::error::CliError;
use crate::outcome::Outcome;

/// `nodes provisions`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct ProvisionsArgs {
    #[command(subcommand)]
    command: ProvisionsCommand,
}

/// The subcommands of `nodes provisions`.
#[derive(Debug, Subcommand)]
enum ProvisionsCommand {
    /// List provisions, newest first.
    List(ListArgs),
    /// Show one provision: status, install step, failure and how long each stage took.
    Show(ProvisionIdArg),
    /// Follow a provision live until it is ready (exit 0) or failed (exit 1): one line per
    /// change (times in UTC), or under --json one JSON document per line. A broken stream is
    /// reopened up to 5 times in a row.
    Watch(WatchArgs),
    /// Cancel an in-flight provision: its server and resources are deleted and its join
    /// token revoked.
    Cancel(ProvisionIdArg),
    /// Start a new provision with a failed one's settings (cloud, region and size choices,
    /// name, role, SSH keys, image, keep-on-failure).
    Retry(ProvisionIdArg),
}

/// The flags of `nodes provisions list`.
#[derive(Debug, Args)]
struct ListArgs {
    /// Provisions per page, 1 to 200 (default: the server's, 50).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=200))]
    page_size: Option<u32>,

    /// Follow every page instead of stopping after the first.
    #[arg(long)]
    all: bool,
}

/// The argument of the commands that act on one provision.
#[derive(Debug, Args)]
struct ProvisionIdArg {
    /// The provision id (`npv_…`).
    #[arg(value_name = "ID")]
    id: String,
}

impl ProvisionIdArg {
    fn id(&self) -> Result<String, CliError> {
        let id = self.id.trim();
        if id.is_empty() {
            return Err(CliError::usage("a provision id is required"));
        }
        Ok(id.to_owned())
    }
}

/// The flags of `nodes provisions watch`.
#[derive(Debug, Args)]
struct WatchArgs {
    #[command(flatten)]
    id: ProvisionIdArg,

    /// The delay before the first reconnect of a broken stream, doubling for each further
    /// one (Go duration). Hidden: the default suits operators; tests shorten it.
    #[arg(long, hide = true, value_name = "DURATION", value_parser = duration::parse)]
    reconnect_backoff: Option<Duration>,
}

/// Runs a `nodes provisions` subcommand.
pub(crate) async fn run(
    args: ProvisionsArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    match args.command {
        ProvisionsCommand::List(args) => list(&args, ctx).await,
        ProvisionsCommand::Show(args) => show(&args, ctx).await,
        ProvisionsCommand::Watch(args) => {
            let id = args.id.id()?;
            let backoff = args.reconnect_backoff.unwrap_or(watch::DEFAULT_BACKOFF);
            watch::follow(&id, ctx, &mut watch::Shown::default(), backoff).await
        }
        ProvisionsCommand::Cancel(args) => cancel(&args, ctx).await,
        ProvisionsCommand::Retry(args) => retry(&args, ctx).await,
    }
}

async fn list(args: &ListArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let mut provisions: Vec<Provision> = Vec::new();
    let mut page_token = String::new();
    let next_page_token = loop {
        let response = client
            .list_provisions(ListProvisionsRequest {
                page_size: args.page_size.unwrap_or(0),
                page_token: page_token.clone(),
            })
            .await
            .map_err(|s| ctx.rpc_error(&s))?
            .into_inner();
        provisions.extend(response.provisions);
        let next = response.next_page_token;
        if !args.all || next.is_empty() {
            break next;
        }
        // A server that hands back the token it was given would page forever.
        if next == page_token {
            return Err(CliError::failed(
                "the server returned the same page token twice; stopping",
            ));
        }
        page_token = next;
    };
    // Newest first even across pages; the sort is stable, so ties keep the server's order.
    provisions
        .sort_by_key(|p| std::cmp::Reverse(p.created_at.as_ref().map(|t| (t.seconds, t.nanos))));
    if ctx.json() {
        let items: Vec<Value> = provisions.iter().map(render::provision_json).collect();
        ctx.print_json(&json!({
            "provisions": items,
            "next_page_token": next_page_token,
        }))?;
        return Ok(Outcome::Success);
    }
    ctx.print(&render::table(&provisions))?;
    if !next_page_token.is_empty() {
        ctx.note("more provisions exist: pass --all to list them all")?;
    }
    Ok(Outcome::Success)
}

async fn show(args: &ProvisionIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let provision = client
        .get_provision(GetProvisionRequest { id: id.clone() })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "provision", &id))?
        .into_inner()
        .provision
        .ok_or_else(|| CliError::failed("the server returned no provision"))?;
    if ctx.json() {
        ctx.print_json(&json!({ "provision": render::provision_json(&provision) }))?;
    } else {
        ctx.print(&render::details(&provision))?;
    }
    Ok(Outcome::Success)
}

async fn cancel(args: &ProvisionIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let provision = client
        .cancel_provision(CancelProvisionRequest { id: id.clone() })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "provision", &id))?
        .into_inner()
        .provision
        .ok_or_else(|| CliError::failed("the server returned no provision"))?;
    if ctx.json() {
        ctx.print_json(&json!({ "provision": render::provision_json(&provision) }))?;
    } else if render::is_terminal(provision.status) {
        ctx.print(&format!(
            "provision {id} cancelled, status: {}",
            render::status_name(provision.status)
        ))?;
    } else {
        // The server unwinds in the background: say so, and how to see it finish.
        ctx.print(&format!(
            "provision {id} is being cancelled, status: {}",
            render::status_name(provision.status)
        ))?;
        ctx.print(&format!(
            "follow with: levelrail-cli nodes provisions watch {id}"
        ))?;
    }
    Ok(Outcome::Success)
}

async fn retry(args: &ProvisionIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let provision = client
        .retry_provision(RetryProvisionRequest {
            id: id.clone(),
            request_id: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "provision", &id))?
        .into_inner()
        .provision
        .ok_or_else(|| CliError::failed("the server returned no provision"))?;
    if ctx.json() {
        ctx.print_json(&json!({ "provision": render::provision_json(&provision) }))?;
    } else {
        ctx.print(&format!(
            "provision {} started with the settings of {id}, status: {}",
            provision.id,
            render::status_name(provision.status)
        ))?;
        ctx.print(&format!(
            "follow with: levelrail-cli nodes provisions watch {}",
            provision.id
        ))?;
    }
    Ok(Outcome::Success)
}
