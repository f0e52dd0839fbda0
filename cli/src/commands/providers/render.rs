//! How provider cards are shown: the `list` table and the JSON mapping of `ProviderStatus`,
//! `CredentialIdentity` and `VerificationResult`. These messages carry no secret material by
//! the API's contract; this module shows only their fields.
use levelrail_proto::credentials::v1::credential_identity::Kind;
use levelrail_proto::credentials::v1::{
    AwsIdentity, AzureIdentity, CredentialIdentity, GcpIdentity, Provider, ProviderStatus,
    VerificationResult,
};
use levelrail_types::{CredentialShape, ProviderId};
use serde_json::{Value, json};

use crate::output::{rfc3339, rfc3339_seconds, table as render_table};
use crate::provider;

/// `PROVIDER  STATUS  IDENTITY  VERIFIED`, one row per provider.
pub(crate) fn table(providers: &[ProviderStatus]) -> String {
    let rows: Vec<Vec<String>> = providers
        .iter()
        .map(|p| {
            vec![
                provider::name_of(p.provider),
                if p.connected {
                    "connected"
                } else {
                    "not connected"
                }
                .to_owned(),
                identity_summary(p),
                verified_summary(p.last_verification.as_ref()),
            ]
        })
        .collect();
    render_table(&["PROVIDER", "STATUS", "IDENTITY", "VERIFIED"], &rows)
}

fn identity_summary(status: &ProviderStatus) -> String {
    let kind = status.identity.as_ref().and_then(|i| i.kind.as_ref());
    let summary = match kind {
        None => String::new(),
        Some(Kind::Token(token)) if token.account.is_empty() => "api token".to_owned(),
        Some(Kind::Token(token)) => {
            let owner = Provider::try_from(status.provider)
                .ok()
                .and_then(|p| ProviderId::try_from(p).ok())
                .and_then(|p| match p.credential_shape() {
                    CredentialShape::Token(shape) => Some(shape.owner),
                    _ => None,
                })
                .unwrap_or("account");
            format!("{owner} {}", token.account)
        }
        Some(Kind::Aws(aws)) => aws_summary(aws),
        Some(Kind::Azure(azure)) => azure_summary(azure),
        Some(Kind::Gcp(gcp)) => gcp_summary(gcp),
    };
    if summary.is_empty() {
        "-".to_owned()
    } else {
        summary
    }
}

fn aws_summary(aws: &AwsIdentity) -> String {
    let mut parts = Vec::new();
    if aws.mode == "ambient" {
        parts.push("ambient".to_owned());
    } else {
        parts.push(format!("key …{}", aws.access_key_id_last4));
    }
    parts.push(
        if aws.region.is_empty() {
            "us-east-1"
        } else {
            &aws.region
        }
        .to_owned(),
    );
    if aws.has_session_token {
        parts.push("session".to_owned());
    }
    if !aws.role_arn.is_empty() {
        parts.push(format!("role {}", aws.role_arn));
    }
    if !aws.account.is_empty() {
        parts.push(format!("account {}", aws.account));
    }
    parts.join(" ")
}

fn azure_summary(azure: &AzureIdentity) -> String {
    let mut summary = format!(
        "tenant {} sub {} rg {}",
        azure.tenant_id, azure.subscription_id, azure.resource_group
    );
    if azure.auth_mode == "federated_token_file" {
        summary.push_str(" (federated)");
    }
    summary
}

fn gcp_summary(gcp: &GcpIdentity) -> String {
    format!("project {} {}", gcp.project_id, gcp.client_email)
}

fn verified_summary(result: Option<&VerificationResult>) -> String {
    match result {
        None => "never".to_owned(),
        Some(r) if r.ok => match &r.checked_at {
            Some(at) => format!("ok {}", rfc3339_seconds(at)),
            None => "ok".to_owned(),
        },
        Some(r) => format!("failed: {}", r.message),
    }
}

/// One provider card as JSON.
pub(crate) fn status_json(status: &ProviderStatus) -> Value {
    json!({
        "provider": provider::name_of(status.provider),
        "display_name": status.display_name,
        "connected": status.connected,
        "saved_at": status.saved_at.as_ref().map(rfc3339),
        "identity": status.identity.as_ref().and_then(identity_json),
        "last_verification": status.last_verification.as_ref().map(verification_json),
    })
}

/// The identity as an object tagged with its `kind` (`token`, `aws`, `azure`, `gcp`).
fn identity_json(identity: &CredentialIdentity) -> Option<Value> {
    Some(match identity.kind.as_ref()? {
        Kind::Token(t) => json!({ "kind": "token", "account": t.account }),
        Kind::Aws(a) => json!({
            "kind": "aws",
            "mode": a.mode,
            "access_key_id_last4": a.access_key_id_last4,
            "region": a.region,
            "role_arn": a.role_arn,
            "has_session_token": a.has_session_token,
            "account": a.account,
        }),
        Kind::Azure(a) => json!({
            "kind": "azure",
            "tenant_id": a.tenant_id,
            "client_id": a.client_id,
            "subscription_id": a.subscription_id,
            "resource_group": a.resource_group,
            "auth_mode": a.auth_mode,
            "federated_token_file": a.federated_token_file,
        }),
        Kind::Gcp(g) => json!({
            "kind": "gcp",
            "project_id": g.project_id,
            "client_email": g.client_email,
            "private_key_id": g.private_key_id,
        }),
    })
}

/// A verification result as JSON.
pub(crate) fn verification_json(result: &VerificationResult) -> Value {
    json!({
        "ok": result.ok,
        "checked_at": result.checked_at.as_ref().map(rfc3339),
        "message": result.message,
        "provider_code": result.provider_code,
        "account": result.account,
        "permissions": result.permissions.iter().map(|p| json!({
            "name": p.name,
            "granted": p.granted,
        })).collect::<Vec<_>>(),
    })
}
