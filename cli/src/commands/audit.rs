//! `levelrail-cli audit list`: the audit log of state-changing calls, newest first, over
//! `AuditService` (an admin token's business).
use clap::{Args, Subcommand};
use levelrail_proto::audit::v1 as pb;
use levelrail_proto::audit::v1::audit_service_client::AuditServiceClient;
use serde_json::json;

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::{rfc3339_or_empty, table};

/// `audit`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

/// The subcommands of `audit`.
#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// List recorded calls, newest first: when, which API token, what, to what, and how it
    /// ended.
    List(ListArgs),
}

/// The flags of `audit list`.
#[derive(Debug, Args)]
struct ListArgs {
    /// How many events to show at most (1–100000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    limit: u32,
}

/// Runs an `audit` subcommand.
pub(crate) async fn run(args: AuditArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match args.command {
        AuditCommand::List(args) => list(args, ctx).await,
    }
}

async fn list(args: ListArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let mut client = AuditServiceClient::new(ctx.channel().await?);
    let mut events: Vec<pb::AuditEvent> = Vec::new();
    let mut page_token = String::new();
    while events.len() < args.limit as usize {
        let left = args.limit as usize - events.len();
        let page = client
            .list_audit_events(pb::ListAuditEventsRequest {
                page_size: u32::try_from(left.min(1_000)).unwrap_or(1_000),
                page_token: page_token.clone(),
            })
            .await
            .map_err(|s| ctx.rpc_error(&s))?
            .into_inner();
        events.extend(page.events);
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    if ctx.json() {
        let all: Vec<serde_json::Value> = events
            .iter()
            .map(|e| {
                json!({
                    "id": e.id,
                    "at": rfc3339_or_empty(e.at.as_ref()),
                    "token_id": e.token_id,
                    "action": e.action,
                    "target": e.target,
                    "outcome": e.outcome,
                    "peer": e.peer,
                })
            })
            .collect();
        ctx.print_json(&json!({ "events": all }))?;
        return Ok(Outcome::Success);
    }
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            vec![
                rfc3339_or_empty(e.at.as_ref()),
                e.token_id.clone(),
                e.action.clone(),
                if e.target.is_empty() {
                    "-".to_owned()
                } else {
                    e.target.clone()
                },
                e.outcome.clone(),
                e.peer.clone(),
            ]
        })
        .collect();
    ctx.print(
        table(
            &["AT", "TOKEN", "ACTION", "TARGET", "OUTCOME", "PEER"],
            &rows,
        )
        .trim_end(),
    )?;
    Ok(Outcome::Success)
}
