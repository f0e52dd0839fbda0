//! `levelrail-cli tokens create|list|revoke`: operator API tokens, over `ApiTokensService`
//! (an admin token's business). `create` prints the token alone on stdout, shown this once
//! only, so `export LEVELRAIL_TOKEN=$(levelrail-cli tokens create … -q)` captures exactly
//! it; its id, scope and expiry go to stderr.
use std::time::Duration;

use clap::{Args, Subcommand};
use levelrail_proto::auth::v1 as apb;
use levelrail_proto::auth::v1::api_tokens_service_client::ApiTokensServiceClient;
use levelrail_types::ApiScope;
use serde_json::json;

use crate::context::Context;
use crate::duration;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::{rfc3339_or_empty, table};

/// `tokens`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct TokensArgs {
    #[command(subcommand)]
    command: TokensCommand,
}

/// The subcommands of `tokens`.
#[derive(Debug, Subcommand)]
enum TokensCommand {
    /// Create an API token. It is printed alone on stdout and shown only this once.
    Create(CreateArgs),
    /// List every API token (revoked and expired ones too); never their secrets.
    List,
    /// Revoke an API token by its id (`lrt_…`): every later call with it is refused.
    Revoke(RevokeArgs),
}

/// The flags of `tokens create`.
#[derive(Debug, Args)]
struct CreateArgs {
    /// What the token is for (1–64 characters), e.g. `ci`.
    #[arg(long, value_name = "NAME")]
    name: String,

    /// What it may call: read, provision (read + provisioning), credentials-admin (read +
    /// cloud credentials) or admin (everything, API tokens included).
    #[arg(long, value_name = "SCOPE", value_parser = parse_scope)]
    scope: ApiScope,

    /// How long it lives: days (`30d`), a Go duration (`12h`, `90m`; at least 1m), or
    /// `never` (it lives until revoked).
    #[arg(long, value_name = "DURATION|never", value_parser = parse_expires)]
    expires: Expires,

    /// Print only the token: no id, scope and expiry line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// The argument of `tokens revoke`.
#[derive(Debug, Args)]
struct RevokeArgs {
    /// The token id (`lrt_…`, the part before the dot), as `create` and `list` print it.
    #[arg(value_name = "TOKEN_ID")]
    token_id: String,
}

/// A token's life, as `--expires` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expires {
    After(Duration),
    Never,
}

fn parse_scope(text: &str) -> Result<ApiScope, String> {
    text.trim()
        .parse()
        .map_err(|e: levelrail_types::UnknownScope| {
            format!(
                "`{}` is not a scope: use read, provision, credentials-admin or admin",
                e.0
            )
        })
}

/// `--expires`: `never`, whole days (`30d`), or a Go duration; at least a minute.
fn parse_expires(text: &str) -> Result<Expires, String> {
    let text = text.trim();
    if text == "never" {
        return Ok(Expires::Never);
    }
    let life = match text.strip_suffix('d') {
        Some(days) if !days.is_empty() && days.chars().all(|c| c.is_ascii_digit()) => {
            let days: u64 = days.parse().map_err(|_| "too many days".to_owned())?;
            Duration::from_secs(days.saturating_mul(86_400))
        }
        _ => duration::parse(text)?,
    };
    if life < Duration::from_secs(60) {
        return Err("must be at least 1m (or `never`)".to_owned());
    }
    if life > Duration::from_secs(3653 * 86_400) {
        return Err("must be at most 3653d, ten years (or `never`)".to_owned());
    }
    Ok(Expires::After(life))
}

/// Runs a `tokens` subcommand.
pub(crate) async fn run(args: TokensArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    match args.command {
        TokensCommand::Create(args) => create(args, ctx).await,
        TokensCommand::List => list(ctx).await,
        TokensCommand::Revoke(args) => revoke(args, ctx).await,
    }
}

/// The scope's name as the CLI spells it (the server's number when it is one this CLI
/// does not know).
fn scope_name(scope: i32) -> String {
    match apb::ApiTokenScope::try_from(scope)
        .ok()
        .and_then(apb::ApiTokenScope::scope)
    {
        Some(scope) => scope.as_str().to_owned(),
        None => format!("unknown ({scope})"),
    }
}

/// A token's facts as JSON (never its secret).
fn info_json(info: &apb::ApiTokenInfo) -> serde_json::Value {
    json!({
        "id": info.id,
        "name": info.label,
        "scope": scope_name(info.scope),
        "created_at": rfc3339_or_empty(info.created_at.as_ref()),
        "expires_at": info.expires_at.as_ref().map(crate::output::rfc3339),
        "revoked_at": info.revoked_at.as_ref().map(crate::output::rfc3339),
    })
}

async fn create(args: CreateArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let name = args.name.trim().to_owned();
    if name.is_empty() {
        return Err(CliError::usage("invalid --name: must not be empty"));
    }
    let expires_in = match args.expires {
        Expires::Never => None,
        Expires::After(life) => Some(prost_types::Duration {
            seconds: i64::try_from(life.as_secs())
                .map_err(|_| CliError::usage("invalid --expires: too long"))?,
            nanos: 0,
        }),
    };
    let mut client = ApiTokensServiceClient::new(ctx.channel().await?);
    let response = client
        .create_api_token(apb::CreateApiTokenRequest {
            label: name,
            scope: apb::ApiTokenScope::from(args.scope) as i32,
            expires_in,
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    let info = response.info.unwrap_or_default();
    if ctx.json() {
        let mut value = info_json(&info);
        value["token"] = json!(response.token);
        ctx.print_json(&value)?;
    } else {
        if !args.quiet {
            let expires = info.expires_at.as_ref().map_or_else(
                || "never expires".to_owned(),
                |t| format!("expires {}", crate::output::rfc3339(t)),
            );
            ctx.note(&format!(
                "API token {} (scope {}, {expires}); shown only this once",
                info.id,
                scope_name(info.scope)
            ))?;
        }
        ctx.print(&response.token)?;
    }
    Ok(Outcome::Success)
}

async fn list(ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let mut client = ApiTokensServiceClient::new(ctx.channel().await?);
    let tokens = client
        .list_api_tokens(apb::ListApiTokensRequest {})
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner()
        .tokens;
    if ctx.json() {
        let all: Vec<serde_json::Value> = tokens.iter().map(info_json).collect();
        ctx.print_json(&json!({ "tokens": all }))?;
        return Ok(Outcome::Success);
    }
    let now = prost_types::Timestamp::from(std::time::SystemTime::now());
    let rows: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| {
            let state = if t.revoked_at.is_some() {
                "revoked"
            } else if t
                .expires_at
                .as_ref()
                .is_some_and(|at| (at.seconds, at.nanos) <= (now.seconds, now.nanos))
            {
                "expired"
            } else {
                "live"
            };
            vec![
                t.id.clone(),
                t.label.clone(),
                scope_name(t.scope),
                state.to_owned(),
                rfc3339_or_empty(t.created_at.as_ref()),
                t.expires_at
                    .as_ref()
                    .map_or_else(|| "never".to_owned(), crate::output::rfc3339),
            ]
        })
        .collect();
    ctx.print(
        table(
            &["ID", "NAME", "SCOPE", "STATE", "CREATED", "EXPIRES"],
            &rows,
        )
        .trim_end(),
    )?;
    Ok(Outcome::Success)
}

async fn revoke(args: RevokeArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let token_id = args.token_id.trim().to_owned();
    if token_id.is_empty() {
        return Err(CliError::usage("a token id is required"));
    }
    let mut client = ApiTokensServiceClient::new(ctx.channel().await?);
    let info = client
        .revoke_api_token(apb::RevokeApiTokenRequest {
            id: token_id.clone(),
        })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "API token", &token_id))?
        .into_inner()
        .info
        .unwrap_or_default();
    if ctx.json() {
        ctx.print_json(&info_json(&info))?;
    } else {
        ctx.print(&format!("API token {token_id} revoked"))?;
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_take_days_go_durations_or_never() {
        assert_eq!(
            parse_expires("30d"),
            Ok(Expires::After(Duration::from_secs(30 * 86_400)))
        );
        assert_eq!(
            parse_expires("1h30m"),
            Ok(Expires::After(Duration::from_secs(5_400)))
        );
        assert_eq!(parse_expires("never"), Ok(Expires::Never));
        assert!(parse_expires("30s").is_err_and(|e| e.contains("at least 1m")));
        assert!(parse_expires("4000d").is_err_and(|e| e.contains("at most")));
        assert!(parse_expires("soon").is_err());
    }

    #[test]
    fn scopes_are_named_as_the_server_names_them() {
        assert_eq!(
            parse_scope("credentials-admin"),
            Ok(ApiScope::CredentialsAdmin)
        );
        assert!(parse_scope("root").is_err_and(|e| e.contains("read, provision")));
        for scope in ApiScope::ALL {
            assert_eq!(
                scope_name(apb::ApiTokenScope::from(scope) as i32),
                scope.as_str()
            );
        }
    }
}
