//! `levelrail-cli nodes orphans list|adopt|delete`: servers this control plane made that no
//! live provision or node accounts for, over `NodesService`. `adopt` prints the agent's env
//! file (it holds a join token, shown once) on stdout and the steps on stderr, so
//! `levelrail-cli nodes orphans adopt nor_… > agent.env` captures exactly the file.
use clap::{Args, Subcommand};
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use levelrail_proto::nodes::v1::{
    AdoptOrphanRequest, DeleteOrphanRequest, ListOrphansRequest, Orphan, OrphanReason, OrphanState,
};
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::{rfc3339, rfc3339_or_empty, table};

/// `nodes orphans`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct OrphansArgs {
    #[command(subcommand)]
    command: OrphansCommand,
}

/// The subcommands of `nodes orphans`.
#[derive(Debug, Subcommand)]
enum OrphansCommand {
    /// List orphaned servers: pending, deleted and adopted, oldest first.
    List,
    /// Take a pending orphan over as a node: prints the agent's env file (with a join token
    /// bound to its name, shown once) to write on the server, and the command to run there.
    Adopt(OrphanIdArg),
    /// Delete an orphan's server at its provider now.
    Delete(OrphanIdArg),
}

/// The argument of `adopt` and `delete`.
#[derive(Debug, Args)]
struct OrphanIdArg {
    /// The orphan id (`nor_…`), as `nodes orphans list` shows it.
    #[arg(value_name = "ID")]
    id: String,
}

impl OrphanIdArg {
    fn id(&self) -> Result<String, CliError> {
        let id = self.id.trim();
        if id.is_empty() {
            return Err(CliError::usage("an orphan id is required"));
        }
        Ok(id.to_owned())
    }
}

/// Runs a `nodes orphans` subcommand.
pub(crate) async fn run(args: OrphansArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match args.command {
        OrphansCommand::List => list(ctx).await,
        OrphansCommand::Adopt(args) => adopt(args, ctx).await,
        OrphansCommand::Delete(args) => delete(args, ctx).await,
    }
}

async fn list(ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let orphans = client
        .list_orphans(ListOrphansRequest {})
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner()
        .orphans;
    if ctx.json() {
        let orphans: Vec<Value> = orphans.iter().map(orphan_json).collect();
        ctx.print_json(&json!({ "orphans": orphans }))?;
        return Ok(Outcome::Success);
    }
    let rows: Vec<Vec<String>> = orphans
        .iter()
        .map(|o| {
            vec![
                o.id.clone(),
                crate::provider::name_of(o.provider),
                or_dash(&o.server_id),
                o.node_name.clone(),
                state_name(o.state()).to_owned(),
                reason_name(o.reason()).to_owned(),
                o.attempts.to_string(),
                or_dash(&o.last_error),
            ]
        })
        .collect();
    ctx.print(&table(
        &[
            "ID",
            "PROVIDER",
            "SERVER",
            "NAME",
            "STATE",
            "REASON",
            "ATTEMPTS",
            "LAST ERROR",
        ],
        &rows,
    ))?;
    Ok(Outcome::Success)
}

async fn adopt(args: OrphanIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let adopted = client
        .adopt_orphan(AdoptOrphanRequest { id: id.clone() })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "orphan", &id))?
        .into_inner();
    let expires_at = adopted.expires_at.as_ref().map(rfc3339);
    if ctx.json() {
        ctx.print_json(&json!({
            "orphan": adopted.orphan.as_ref().map(orphan_json),
            "token_id": adopted.token_id,
            "token": adopted.token,
            "expires_at": expires_at,
            "env_file": adopted.env_file,
            "env_file_path": adopted.env_file_path,
            "command": adopted.command,
        }))?;
        return Ok(Outcome::Success);
    }
    ctx.note(&format!(
        "orphan {id} adopted; join token {} (expires {}). On the server, write the env file \
         below to {} (mode 0600), then run: {}",
        adopted.token_id,
        expires_at.as_deref().unwrap_or("unknown"),
        adopted.env_file_path,
        adopted.command
    ))?;
    ctx.print(adopted.env_file.trim_end())?;
    Ok(Outcome::Success)
}

async fn delete(args: OrphanIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let response = client
        .delete_orphan(DeleteOrphanRequest { id: id.clone() })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "orphan", &id))?
        .into_inner();
    let error = response
        .orphan
        .as_ref()
        .map(|o| o.last_error.clone())
        .unwrap_or_default();
    if ctx.json() {
        ctx.print_json(&json!({
            "orphan": response.orphan.as_ref().map(orphan_json),
            "deleted": response.deleted,
        }))?;
    } else if response.deleted {
        ctx.print(&format!("orphan {id}: server deleted"))?;
    } else {
        ctx.print(&format!("orphan {id}: the server was not deleted: {error}"))?;
    }
    Ok(if response.deleted {
        Outcome::Success
    } else {
        Outcome::Unsuccessful
    })
}

fn orphan_json(o: &Orphan) -> Value {
    json!({
        "id": o.id,
        "provider": crate::provider::name_of(o.provider),
        "server_id": o.server_id,
        "provision_id": o.provision_id,
        "node_name": o.node_name,
        "region": o.region,
        "reason": reason_name(o.reason()),
        "first_seen": rfc3339_or_empty(o.first_seen.as_ref()),
        "attempts": o.attempts,
        "last_error": o.last_error,
        "state": state_name(o.state()),
    })
}

fn state_name(s: OrphanState) -> &'static str {
    match s {
        OrphanState::Unspecified => "unknown",
        OrphanState::Pending => "pending",
        OrphanState::Deleted => "deleted",
        OrphanState::Adopted => "adopted",
    }
}

fn reason_name(r: OrphanReason) -> &'static str {
    match r {
        OrphanReason::Unspecified => "unknown",
        OrphanReason::UndoGaveUp => "undo gave up",
        OrphanReason::FailedProvision => "failed provision",
        OrphanReason::UnknownProvision => "unknown provision",
    }
}

fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text.to_owned()
    }
}
