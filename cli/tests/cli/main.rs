//! Integration tests of `levelrail-cli`: each runs `levelrail_cli::run` against an in-process
//! fake `CredentialsService` on 127.0.0.1:0, with scripted stdin or prompts.
mod errors;
mod helpers;
mod list;
mod remove_verify;
mod set_credential;
mod set_credential_aws;
mod tls;
