//! `levelrail-cli nodes providers list|set-credential|remove|verify`: the provider credentials,
//! over `CredentialsService`. Stored secrets are write-only: nothing here can print one.
//! `regions|sizes` show the provider's catalog through the stored credential (`catalog`).
mod catalog;
mod credential;
mod render;

use clap::{Args, Subcommand};
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_proto::credentials::v1::{
    DeleteCredentialRequest, ListProvidersRequest, SetCredentialRequest, VerifyCredentialRequest,
};
use serde_json::json;

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::provider;

use credential::SetCredentialArgs;

/// `nodes providers`.
#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub(crate) struct ProvidersArgs {
    #[command(subcommand)]
    command: ProvidersCommand,
}

/// The subcommands of `nodes providers`.
#[derive(Debug, Subcommand)]
enum ProvidersCommand {
    /// List hetzner, digitalocean, aws, azure and gcp with their connection state, the
    /// identity the credential acts as, and the last verification.
    List,
    /// Store (or replace) a provider's credential. Values not given as flags are read from
    /// piped stdin, or prompted for without echo on a terminal.
    SetCredential(SetCredentialArgs),
    /// Remove a provider's credential (not an error when there is none).
    Remove(ProviderArg),
    /// Probe the provider with the stored credential and record the result. Exits 1 when the
    /// provider refuses it.
    Verify(ProviderArg),
    /// List the regions (locations, zones) where the provider can create servers.
    Regions(ProviderArg),
    /// List the sizes available in a region, with the monthly price where the provider
    /// publishes one.
    Sizes(catalog::SizesArgs),
}

/// A command that acts on one provider.
#[derive(Debug, Args)]
struct ProviderArg {
    /// The provider: hetzner, digitalocean, aws, azure or gcp.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
}

/// Runs a `nodes providers` subcommand.
pub(crate) async fn run(
    args: ProvidersArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    match args.command {
        ProvidersCommand::List => list(ctx).await,
        ProvidersCommand::SetCredential(args) => set_credential(&args, ctx).await,
        ProvidersCommand::Remove(args) => remove(&args, ctx).await,
        ProvidersCommand::Verify(args) => verify(&args, ctx).await,
        ProvidersCommand::Regions(args) => catalog::regions(args.provider.as_deref(), ctx).await,
        ProvidersCommand::Sizes(args) => catalog::sizes(&args, ctx).await,
    }
}

async fn list(ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let mut client = CredentialsServiceClient::new(ctx.channel().await?);
    let response = client
        .list_providers(ListProvidersRequest {})
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    if ctx.json() {
        let providers: Vec<_> = response.providers.iter().map(render::status_json).collect();
        ctx.print_json(&json!({ "providers": providers }))?;
    } else {
        ctx.print(&render::table(&response.providers))?;
    }
    Ok(Outcome::Success)
}

async fn set_credential(
    args: &SetCredentialArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    let provider = provider::parse(args.provider.as_deref())?;
    // Everything local (flags, stdin, prompts) is settled before connecting.
    let credential = credential::build(provider, args, ctx)?;
    let mut client = CredentialsServiceClient::new(ctx.channel().await?);
    let request = SetCredentialRequest {
        provider: provider as i32,
        credential: Some(credential),
    };
    let response = client
        .set_credential(request)
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    let name = provider::name(provider);
    if ctx.json() {
        ctx.print_json(
            &json!({ "provider": response.provider.as_ref().map(render::status_json) }),
        )?;
    } else {
        ctx.print(&format!("provider \"{name}\" credential stored"))?;
    }
    Ok(Outcome::Success)
}

async fn remove(args: &ProviderArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let provider = provider::parse(args.provider.as_deref())?;
    let mut client = CredentialsServiceClient::new(ctx.channel().await?);
    let response = client
        .delete_credential(DeleteCredentialRequest {
            provider: provider as i32,
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    let name = provider::name(provider);
    if ctx.json() {
        ctx.print_json(&json!({
            "deleted": response.deleted,
            "provider": response.provider.as_ref().map(render::status_json),
        }))?;
    } else if response.deleted {
        ctx.print(&format!("provider \"{name}\" credential removed"))?;
    } else {
        ctx.print(&format!("provider \"{name}\" had no credential"))?;
    }
    Ok(Outcome::Success)
}

async fn verify(args: &ProviderArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let provider = provider::parse(args.provider.as_deref())?;
    let mut client = CredentialsServiceClient::new(ctx.channel().await?);
    let response = client
        .verify_credential(VerifyCredentialRequest {
            provider: provider as i32,
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    let ok = response.result.as_ref().is_some_and(|r| r.ok);
    if ctx.json() {
        ctx.print_json(&json!({
            "result": response.result.as_ref().map(render::verification_json),
            "provider": response.provider.as_ref().map(render::status_json),
        }))?;
    } else {
        let name = provider::name(provider);
        let message = response
            .result
            .as_ref()
            .map_or("the server returned no result", |r| r.message.as_str());
        if ok {
            ctx.print(&format!("provider \"{name}\" verified: {message}"))?;
        } else {
            ctx.print(&format!(
                "provider \"{name}\" verification failed: {message}"
            ))?;
        }
        let checks = response.result.iter().flat_map(|r| &r.permissions);
        let missing: Vec<&str> = checks
            .clone()
            .filter(|p| !p.granted)
            .map(|p| p.name.as_str())
            .collect();
        let checked = checks.count();
        if checked > 0 {
            ctx.print(&format!(
                "permissions: {} of {checked} proven{}",
                checked - missing.len(),
                match missing.is_empty() {
                    true => String::new(),
                    false => format!("; missing: {}", missing.join(", ")),
                }
            ))?;
        }
    }
    Ok(if ok {
        Outcome::Success
    } else {
        Outcome::Unsuccessful
    })
}
