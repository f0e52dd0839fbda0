//! `levelrail-cli nodes …`: the parent of every node-related group.
//!
//! Planned siblings of `providers` (see the seed documentation), each its own module under
//! `commands/` and one variant of [`NodesCommand`]: `provision` (`nodes provision`),
//! `provisions` (`nodes provisions list|show|watch|cancel`), `join_tokens`
//! (`nodes join-tokens create`) and `registry` (`nodes list|show|delete`, flattened in as
//! direct variants `List`, `Show`, `Delete`).
use clap::{Args, Subcommand};

use crate::commands::{Outcome, providers};
use crate::context::Context;
use crate::error::CliError;

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
    /// Cloud provider credentials: list, set-credential, remove, verify.
    Providers(providers::ProvidersArgs),
}

/// Runs a `nodes` subcommand.
pub(crate) async fn run(args: NodesArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match args.command {
        NodesCommand::Providers(args) => providers::run(args, ctx).await,
    }
}
