//! The non-secret facts of a provider card: who the credential acts as, when it was
//! saved, and the last verification.
use leptos::prelude::*;

use crate::api::types::{PermissionCheck, ProviderStatus, credential_identity::Kind};
use crate::browser::local_time;
use crate::logic::stages::timestamp_ms;

/// A `<dl>` of the card's identity, saved time and last verification.
#[component]
pub fn IdentityFacts(status: Signal<ProviderStatus>, slug: &'static str) -> impl IntoView {
    let rows = move || {
        let s = status.get();
        let mut rows: Vec<(&'static str, String)> = Vec::new();
        if !s.connected {
            return rows;
        }
        // The account learnt by the last verification, when the identity has none yet.
        let verified = s
            .last_verification
            .as_ref()
            .map(|v| v.account.clone())
            .unwrap_or_default();
        let account = |a: String| or_unverified(if a.is_empty() { verified.clone() } else { a });
        match s.identity.and_then(|i| i.kind) {
            Some(Kind::Token(t)) => rows.push(("Account", account(t.account))),
            Some(Kind::Aws(a)) => {
                let mode = match a.mode.as_str() {
                    "ambient" => "Control plane's own identity".to_owned(),
                    _ => "Static access key".to_owned(),
                };
                rows.push(("Mode", mode));
                if !a.access_key_id_last4.is_empty() {
                    rows.push(("Access key", format!("…{}", a.access_key_id_last4)));
                }
                if a.has_session_token {
                    rows.push(("Session token", "stored".into()));
                }
                rows.push(("Region", or_default(a.region, "us-east-1 (default)")));
                if !a.role_arn.is_empty() {
                    rows.push(("Role ARN", a.role_arn));
                }
                rows.push(("Account", account(a.account)));
            }
            Some(Kind::Azure(a)) => {
                rows.push(("Tenant", a.tenant_id));
                rows.push(("Client", a.client_id));
                rows.push(("Subscription", a.subscription_id));
                rows.push(("Resource group", a.resource_group));
                let auth = match a.auth_mode.as_str() {
                    "federated_token_file" => {
                        format!("federated token file {}", a.federated_token_file)
                    }
                    _ => "client secret".to_owned(),
                };
                rows.push(("Authentication", auth));
            }
            Some(Kind::Gcp(g)) => {
                rows.push(("Project", g.project_id));
                rows.push(("Service account", g.client_email));
                rows.push(("Key id", g.private_key_id));
            }
            None => {}
        }
        if let Some(t) = s.saved_at.as_ref() {
            rows.push(("Saved", local_time(timestamp_ms(t))));
        }
        rows
    };
    let verification = move || {
        let s = status.get();
        if !s.connected {
            return None;
        }
        let checks = s
            .last_verification
            .as_ref()
            .map(|v| v.permissions.clone())
            .unwrap_or_default();
        let text = match s.last_verification {
            None => "Never verified".to_owned(),
            Some(v) => {
                let when = v
                    .checked_at
                    .as_ref()
                    .map(|t| local_time(timestamp_ms(t)))
                    .unwrap_or_default();
                let code = match v.provider_code.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", v.provider_code),
                };
                match v.ok {
                    true => format!("✓ Verified {when} — {}", v.message),
                    false => format!("✗ Failed {when} — {}{code}", v.message),
                }
            }
        };
        Some(view! {
            <dt>"Last verification"</dt>
            <dd data-testid=format!("provider-verification-{slug}")>{text}</dd>
            {permissions(checks, slug)}
        })
    };
    view! {
        <dl class="facts" data-testid=format!("provider-identity-{slug}")>
            {move || {
                rows()
                    .into_iter()
                    .map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> })
                    .collect_view()
            }}
            {verification}
        </dl>
    }
}

/// The permissions the last verification checked: a count of each, the missing ones
/// named, and every one behind a disclosure.
fn permissions(checks: Vec<PermissionCheck>, slug: &'static str) -> Option<impl IntoView> {
    if checks.is_empty() {
        return None;
    }
    let missing: Vec<String> = checks
        .iter()
        .filter(|c| !c.granted)
        .map(|c| c.name.clone())
        .collect();
    let proven = checks.len() - missing.len();
    let summary = match missing.is_empty() {
        true => format!("{proven} proven, none missing"),
        false => format!(
            "{proven} proven, {} missing or not proven: {}",
            missing.len(),
            missing.join(", ")
        ),
    };
    Some(view! {
        <dt>"Permissions"</dt>
        <dd data-testid=format!("provider-permissions-{slug}") data-missing=missing.len()>
            <details>
                <summary class:error=!missing.is_empty()>{summary}</summary>
                <ul class="permissions">
                    {checks
                        .into_iter()
                        .map(|c| view! {
                            <li class:error=!c.granted>
                                <span aria-hidden="true">{if c.granted { "✓ " } else { "✗ " }}</span>
                                <span class="mono">{c.name}</span>
                                <span class="sr-only">{if c.granted { " (proven)" } else { " (missing or not proven)" }}</span>
                            </li>
                        })
                        .collect_view()}
                </ul>
            </details>
        </dd>
    })
}

fn or_unverified(s: String) -> String {
    or_default(s, "learnt on verification")
}

fn or_default(s: String, default: &str) -> String {
    if s.is_empty() { default.to_owned() } else { s }
}
