//! `levelrail-cli nodes …`: the parent of every node-related group. Each group is its own
//! module under `commands/` and one variant of [`NodesCommand`]: `providers` (credentials),
//! `join_tokens` (`nodes join-tokens create|revoke`), `registry` (`nodes list|show|delete`,
//! direct variants), `provision` (`nodes provision`), `provisions`
//! (`nodes provisions list|show|watch|cancel`) and `orphans` (`nodes orphans
//! list|adopt|delete`).
use clap::{Args, Subcommand};

use crate::commands::{join_tokens, orphans, providers, provision, provisions, registry};
use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;

/// `nodes`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct NodesArgs {
    #[command(subcommand)]
    command: NodesCommand,
}

/// The subcommands of `nodes`.
#[derive(Debug, Subcommand)]
pub(crate) enum NodesCommand {
    /// Cloud provider credentials and catalogs: list, set-credential, remove, verify, regions,
    /// sizes.
    Providers(providers::ProvidersArgs),
    /// Join tokens for enrolling a machine you already have: create, revoke.
    JoinTokens(join_tokens::JoinTokensArgs),
    /// List the enrolled nodes, optionally only those of a status, cloud or role.
    List(registry::ListArgs),
    /// Show one node.
    Show(registry::NodeIdArg),
    /// Delete a node record and invalidate its identity; `--destroy-server` also deletes a
    /// provisioned VM (otherwise it keeps running).
    Delete(registry::DeleteArgs),
    /// Create a server at a provider and enroll it as a node.
    Provision(provision::ProvisionArgs),
    /// Provisions already started: list, show, watch, cancel.
    Provisions(provisions::ProvisionsArgs),
    /// Servers this control plane made that no provision or node accounts for: list, adopt,
    /// delete.
    Orphans(orphans::OrphansArgs),
}

/// Runs a `nodes` subcommand.
pub(crate) async fn run(args: NodesArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match args.command {
        NodesCommand::Providers(args) => providers::run(args, ctx).await,
        NodesCommand::JoinTokens(args) => join_tokens::run(args, ctx).await,
        NodesCommand::List(args) => registry::list(&args, ctx).await,
        NodesCommand::Show(args) => registry::show(args, ctx).await,
        NodesCommand::Delete(args) => registry::delete(args, ctx).await,
        NodesCommand::Provision(args) => provision::run(args, ctx).await,
        NodesCommand::Provisions(args) => provisions::run(args, ctx).await,
        NodesCommand::Orphans(args) => orphans::run(args, ctx).await,
    }
}
