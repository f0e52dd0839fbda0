//! Integration tests of `levelrail-cli`: each runs `levelrail_cli::run` against in-process
//! fakes of `CredentialsService`, `NodesService` and `ProvisionerService` on 127.0.0.1:0,
//! with scripted stdin or prompts.
mod catalog;
mod errors;
mod fake_nodes;
mod fake_provisioner;
mod fallback;
mod helpers;
mod join_tokens;
mod list;
mod orphans;
mod provision;
mod provisions;
mod registry;
mod remove_verify;
mod set_credential;
mod set_credential_aws;
mod tls;
mod watch;
