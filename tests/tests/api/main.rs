//! End-to-end tests of the public API through the real listener.
mod api_tokens;
mod boot;
mod canary;
mod cli;
mod credentials_api;
mod fallback;
mod grant_expiry;
mod harness;
mod listener;
mod nodes;
mod progress_endpoint;
mod provision;
mod provision_aws;
mod provision_azure_gcp;
mod real_boot;
mod reflection;
mod tamper;
