//! `levelrail-cli nodes join-tokens create|revoke`: single-use join tokens for enrolling a
//! machine by hand, over `NodesService`. `create` is the one command that prints a secret:
//! the token alone on stdout, so `export APP_JOIN_TOKEN=$(levelrail-cli nodes join-tokens
//! create -q)` captures exactly it, and everything else goes to stderr.
use std::time::Duration;

use clap::{Args, Subcommand};
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use levelrail_proto::nodes::v1::{CreateJoinTokenRequest, RevokeJoinTokenRequest};
use serde_json::json;

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::rfc3339;
use crate::{duration, validate};

/// The longest join-token lifetime the server accepts.
const TTL_MAX: Duration = Duration::from_secs(24 * 3600);

/// `nodes join-tokens`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct JoinTokensArgs {
    #[command(subcommand)]
    command: JoinTokensCommand,
}

/// The subcommands of `nodes join-tokens`.
#[derive(Debug, Subcommand)]
enum JoinTokensCommand {
    /// Mint a single-use join token for `levelrail-agent` (APP_JOIN_TOKEN). The token is
    /// printed alone on stdout and shown only this once; its id and expiry go to stderr.
    Create(CreateArgs),
    /// Revoke an unused join token by its id (`njt_…`).
    Revoke(RevokeArgs),
}

/// The flags of `nodes join-tokens create`.
#[derive(Debug, Args)]
struct CreateArgs {
    /// How long the token can be redeemed, as a Go duration (90s, 15m, 1h30m); at most 24h.
    /// Default: 15m.
    #[arg(long, value_name = "DURATION", value_parser = parse_ttl)]
    ttl: Option<Duration>,

    /// The only node name this token may enroll.
    #[arg(long, value_name = "NAME")]
    node_name: Option<String>,

    /// Print only the token: no id and expiry line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// The argument of `nodes join-tokens revoke`.
#[derive(Debug, Args)]
struct RevokeArgs {
    /// The token id (`njt_…`), as printed by `create`.
    #[arg(value_name = "TOKEN_ID")]
    token_id: String,
}

/// `--ttl`: a Go duration of whole seconds, 1s to 24h.
fn parse_ttl(text: &str) -> Result<Duration, String> {
    let ttl = duration::parse(text)?;
    if ttl.is_zero() {
        return Err("must be longer than 0s".to_owned());
    }
    if ttl.subsec_nanos() != 0 {
        return Err("must be a whole number of seconds".to_owned());
    }
    if ttl > TTL_MAX {
        return Err("must be at most 24h".to_owned());
    }
    Ok(ttl)
}

/// Runs a `nodes join-tokens` subcommand.
pub(crate) async fn run(
    args: JoinTokensArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    match args.command {
        JoinTokensCommand::Create(args) => create(args, ctx).await,
        JoinTokensCommand::Revoke(args) => revoke(args, ctx).await,
    }
}

async fn create(args: CreateArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let node_name = args.node_name.unwrap_or_default();
    if !node_name.is_empty() {
        validate::node_name("--node-name", &node_name)?;
    }
    let ttl_seconds = match args.ttl {
        // parse_ttl bounds it to 24h, far below u32::MAX seconds.
        Some(ttl) => u32::try_from(ttl.as_secs())
            .map_err(|_| CliError::usage("invalid --ttl: must be at most 24h"))?,
        None => 0,
    };
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let response = client
        .create_join_token(CreateJoinTokenRequest {
            ttl_seconds,
            node_name,
            provision_id: String::new(),
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    let expires_at = response.expires_at.as_ref().map(rfc3339);
    if ctx.json() {
        ctx.print_json(&json!({
            "token_id": response.token_id,
            "token": response.token,
            "expires_at": expires_at,
            "ca_fingerprint": response.ca_fingerprint,
        }))?;
    } else {
        if !args.quiet {
            let expires = expires_at.as_deref().unwrap_or("unknown");
            ctx.note(&format!(
                "join token {} (expires {expires})",
                response.token_id
            ))?;
        }
        ctx.print(&response.token)?;
    }
    Ok(Outcome::Success)
}

async fn revoke(args: RevokeArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let token_id = args.token_id.trim().to_owned();
    if token_id.is_empty() {
        return Err(CliError::usage("a token id is required"));
    }
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    client
        .revoke_join_token(RevokeJoinTokenRequest {
            token_id: token_id.clone(),
        })
        .await
        .map_err(|s| {
            if s.code() == tonic::Code::NotFound {
                CliError::failed(format!(
                    "join token {token_id} not found (unknown, already used or revoked)"
                ))
            } else {
                ctx.rpc_error(&s)
            }
        })?;
    if ctx.json() {
        ctx.print_json(&json!({ "token_id": token_id, "revoked": true }))?;
    } else {
        ctx.print(&format!("join token {token_id} revoked"))?;
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_whole_seconds_up_to_a_day() {
        assert_eq!(parse_ttl("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_ttl("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_ttl("24h"), Ok(TTL_MAX));
        assert_eq!(parse_ttl("25h"), Err("must be at most 24h".to_owned()));
        assert_eq!(parse_ttl("0"), Err("must be longer than 0s".to_owned()));
        assert_eq!(
            parse_ttl("1500ms"),
            Err("must be a whole number of seconds".to_owned())
        );
    }
}
