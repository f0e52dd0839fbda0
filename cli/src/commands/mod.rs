//! The command tree. Each command group is one module; `nodes` is the only top-level group and
//! hands its subcommands on to their own modules (`nodes providers …` → `providers/`).
//!
//! To add a group: define its `Args`/`Subcommand` types and an
//! `async fn run(args, &mut Context) -> Result<Outcome, CliError>` in a new module here, then
//! add one variant to [`nodes::NodesCommand`] (or to [`Commands`] for a new top-level group)
//! and one arm to the matching `run`.
pub(crate) mod audit;
pub(crate) mod join_tokens;
pub(crate) mod nodes;
pub(crate) mod orphans;
pub(crate) mod providers;
pub(crate) mod provision;
pub(crate) mod provisions;
pub(crate) mod registry;
pub(crate) mod tokens;

use clap::Subcommand;

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Commands {
    /// Cloud nodes: provider credentials, provisions, join tokens and the node registry.
    Nodes(nodes::NodesArgs),
    /// Operator API tokens: create (with a scope and an expiry), list, revoke.
    Tokens(tokens::TokensArgs),
    /// The audit log: every state-changing call, with the token that made it.
    Audit(audit::AuditArgs),
}

/// Runs `command`.
pub(crate) async fn run(command: Commands, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match command {
        Commands::Nodes(args) => nodes::run(args, ctx).await,
        Commands::Tokens(args) => tokens::run(args, ctx).await,
        Commands::Audit(args) => audit::run(args, ctx).await,
    }
}
