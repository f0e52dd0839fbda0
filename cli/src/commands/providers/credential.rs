//! `set-credential` input: its flags, and turning them plus piped stdin or prompts into the
//! one credential shape the provider takes (`ApiToken`, `AwsCredential` or `JsonDocument`).
use clap::Args;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{ApiToken, AwsCredential, JsonDocument, Provider};
use levelrail_types::{CredentialShape, ProviderId};
use secrecy::{ExposeSecret as _, SecretString};

use crate::context::Context;
use crate::error::CliError;
use crate::globals::secret_arg;
use crate::secrets::{Shape, read_secret};

/// The message when a non-AWS provider gets no credential from any source.
pub(crate) const TOKEN_REQUIRED: &str =
    "a provider token is required: pass --provider-token, pipe it on stdin, or run interactively";
/// The message when AWS gets neither a complete key pair nor ambient credentials.
pub(crate) const AWS_KEY_REQUIRED: &str = "--provider-token (access key id) and \
     --secret-access-key are required for aws, or pass --use-ambient-credentials";

/// The flags of `nodes providers set-credential`.
#[derive(Debug, Args)]
pub(crate) struct SetCredentialArgs {
    /// The provider: hetzner, digitalocean, aws, azure or gcp.
    #[arg(long, value_name = "NAME")]
    pub(crate) provider: Option<String>,

    /// The credential: the API token (hetzner, digitalocean), the access key id (aws), the
    /// service principal JSON (azure) or the service account key JSON (gcp). Omit it to pipe
    /// the value on stdin or be prompted: a flag value lands in shell history.
    #[arg(long, value_name = "TOKEN", value_parser = secret_arg)]
    provider_token: Option<SecretString>,

    /// aws: the secret access key. Omit it to pipe it on stdin (after the access key id, when
    /// that is piped too) or be prompted.
    #[arg(long, value_name = "KEY", value_parser = secret_arg)]
    secret_access_key: Option<SecretString>,

    /// aws: a session token, for temporary (ASIA…) credentials.
    #[arg(long, value_name = "TOKEN", value_parser = secret_arg)]
    session_token: Option<SecretString>,

    /// aws: the default region for region and size lookups (default us-east-1).
    #[arg(long, value_name = "REGION")]
    region: Option<String>,

    /// aws: an IAM role to assume through STS before every call; the stored key then needs
    /// only sts:AssumeRole on it.
    #[arg(long, value_name = "ARN")]
    role_arn: Option<String>,

    /// aws: use the control plane's own AWS identity (environment, shared config or instance
    /// profile) instead of a stored key; nothing is read from stdin.
    #[arg(long)]
    use_ambient_credentials: bool,

    /// gcp: the project to create servers in, required with a workload identity federation
    /// (`external_account`) file, which names no project; a service-account key names its own.
    #[arg(long, value_name = "PROJECT")]
    project_id: Option<String>,
}

const HISTORY_WARNING: &str =
    "lands in shell history and the process list; pipe the value or omit the flag for a prompt";

/// Builds the credential for `provider`, printing a warning for each secret given as a flag.
pub(crate) fn build(
    provider: Provider,
    args: &SetCredentialArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Credential, CliError> {
    if provider != Provider::Aws {
        reject_aws_flags(args)?;
    }
    if provider != Provider::Gcp && args.project_id.is_some() {
        return Err(CliError::usage(
            "--project-id only applies to --provider gcp",
        ));
    }
    if args.provider_token.is_some() {
        ctx.warn(&format!("--provider-token {HISTORY_WARNING}"))?;
    }
    let Ok(id) = ProviderId::try_from(provider) else {
        return Err(CliError::usage(crate::provider::PROVIDER_REQUIRED));
    };
    match id.credential_shape() {
        CredentialShape::Token(_) => Ok(Credential::ApiToken(api_token(args, ctx)?)),
        CredentialShape::AwsKeys => Ok(Credential::Aws(aws(args, ctx)?)),
        CredentialShape::AzureServicePrincipal => Ok(Credential::Azure(json_document(
            args,
            ctx,
            "Service principal JSON: ",
            "service principal JSON",
        )?)),
        CredentialShape::GoogleServiceAccount => {
            let mut document = json_document(
                args,
                ctx,
                "Service account key JSON: ",
                "service account key JSON",
            )?;
            document.project_id = args.project_id.clone().unwrap_or_default();
            Ok(Credential::Gcp(document))
        }
    }
}

fn reject_aws_flags(args: &SetCredentialArgs) -> Result<(), CliError> {
    let given = [
        ("--secret-access-key", args.secret_access_key.is_some()),
        ("--session-token", args.session_token.is_some()),
        ("--region", args.region.is_some()),
        ("--role-arn", args.role_arn.is_some()),
        ("--use-ambient-credentials", args.use_ambient_credentials),
    ];
    match given.iter().find(|(_, present)| *present) {
        Some((flag, _)) => Err(CliError::usage(format!(
            "{flag} only applies to --provider aws"
        ))),
        None => Ok(()),
    }
}

/// A flag value wins; otherwise the value is read. An empty flag counts as no value.
fn flag_or_read(
    flag: Option<&SecretString>,
    ctx: &mut Context<'_, '_>,
    shape: Shape,
    prompt: &str,
    what: &str,
) -> Result<Option<String>, CliError> {
    let value = match flag {
        Some(value) => Some(value.clone()),
        None => read_secret(ctx.secrets(), shape, prompt, what)?,
    };
    Ok(value
        .map(|v| v.expose_secret().to_owned())
        .filter(|v| !v.is_empty()))
}

fn api_token(args: &SetCredentialArgs, ctx: &mut Context<'_, '_>) -> Result<ApiToken, CliError> {
    let token = flag_or_read(
        args.provider_token.as_ref(),
        ctx,
        Shape::Line,
        "Provider token: ",
        "provider token",
    )?
    .ok_or_else(|| CliError::usage(TOKEN_REQUIRED))?;
    Ok(ApiToken { token })
}

fn json_document(
    args: &SetCredentialArgs,
    ctx: &mut Context<'_, '_>,
    prompt: &str,
    what: &str,
) -> Result<JsonDocument, CliError> {
    let json = flag_or_read(
        args.provider_token.as_ref(),
        ctx,
        Shape::Document,
        prompt,
        what,
    )?
    .ok_or_else(|| CliError::usage(TOKEN_REQUIRED))?;
    // A quick syntax check saves a round trip; the server validates the fields. serde_json's
    // syntax errors give a position, never the text, so nothing secret is echoed.
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(serde_json::Value::Object(_)) => Ok(JsonDocument {
            json,
            ..JsonDocument::default()
        }),
        Ok(_) => Err(CliError::usage(format!("the {what} must be a JSON object"))),
        Err(e) => Err(CliError::usage(format!(
            "the {what} is not valid JSON: {e}"
        ))),
    }
}

fn aws(args: &SetCredentialArgs, ctx: &mut Context<'_, '_>) -> Result<AwsCredential, CliError> {
    let region = args.region.clone().unwrap_or_default();
    let role_arn = args.role_arn.clone().unwrap_or_default();
    if args.use_ambient_credentials {
        if args.provider_token.is_some()
            || args.secret_access_key.is_some()
            || args.session_token.is_some()
        {
            return Err(CliError::usage(
                "--use-ambient-credentials cannot be combined with --provider-token, \
                 --secret-access-key or --session-token",
            ));
        }
        return Ok(AwsCredential {
            region,
            role_arn,
            use_ambient_credentials: true,
            ..AwsCredential::default()
        });
    }
    if args.secret_access_key.is_some() {
        ctx.warn(&format!("--secret-access-key {HISTORY_WARNING}"))?;
    }
    if args.session_token.is_some() {
        ctx.warn("--session-token lands in shell history and the process list")?;
    }
    let missing = || CliError::usage(AWS_KEY_REQUIRED);
    // Piped: the access key id is the first line and the secret the next one.
    let access_key_id = flag_or_read(
        args.provider_token.as_ref(),
        ctx,
        Shape::Line,
        "Provider token: ",
        "access key id",
    )?
    .ok_or_else(missing)?;
    let secret_access_key = flag_or_read(
        args.secret_access_key.as_ref(),
        ctx,
        Shape::Line,
        "Secret access key: ",
        "secret access key",
    )?
    .ok_or_else(missing)?;
    let session_token = args
        .session_token
        .as_ref()
        .map(|t| t.expose_secret().to_owned())
        .unwrap_or_default();
    Ok(AwsCredential {
        access_key_id,
        secret_access_key,
        session_token,
        region,
        role_arn,
        use_ambient_credentials: false,
    })
}
