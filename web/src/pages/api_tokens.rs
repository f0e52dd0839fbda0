//! `/settings/api-tokens`: the operator API tokens: create one (its secret shown once),
//! see each one's scope, state and expiry, revoke one after an inline confirmation. Only an
//! admin token may use it; another sees the server's refusal.
use leptos::prelude::*;

use crate::api::types::{ApiTokenInfo, ApiTokenScope};
use crate::api::use_api;
use crate::browser::{local_time, now_ms};
use crate::components::error_view::error_fallback;
use crate::logic::stages::timestamp_ms;

/// The scopes offered, with what each allows.
const SCOPES: [(ApiTokenScope, &str, &str); 4] = [
    (
        ApiTokenScope::Read,
        "read",
        "read: lists, details and live progress",
    ),
    (
        ApiTokenScope::Provision,
        "provision",
        "provision: read, plus nodes and provisions",
    ),
    (
        ApiTokenScope::CredentialsAdmin,
        "credentials-admin",
        "credentials-admin: read, plus cloud credentials",
    ),
    (
        ApiTokenScope::Admin,
        "admin",
        "admin: everything, API tokens included",
    ),
];

/// The lifetimes offered, in days (`None`: until revoked).
const LIVES: [(&str, Option<u32>, &str); 5] = [
    ("7", Some(7), "7 days"),
    ("30", Some(30), "30 days"),
    ("90", Some(90), "90 days"),
    ("365", Some(365), "1 year"),
    ("never", None, "Never (until revoked)"),
];

/// Settings › API tokens.
#[component]
pub fn ApiTokensPage() -> impl IntoView {
    let api = use_api();
    let tokens = LocalResource::new(move || async move { api.list_api_tokens().await });
    let created = RwSignal::new(None::<(String, String)>);
    let notice = RwSignal::new(None::<String>);
    let on_change = Callback::new(move |()| tokens.refetch());
    let list = move || {
        Suspend::new(async move {
            tokens
                .await
                .map(|t| view! { <TokensTable tokens=t notice=notice on_change=on_change/> })
        })
    };
    view! {
        <div class="page-head">
            <p class="crumbs">"Settings"</p>
            <h1>"API tokens"</h1>
            <p class="lead">
                "Tokens for the CLI, scripts and other services. Give each the narrowest scope it needs and a lifetime; a token is shown only once, when it is created."
            </p>
        </div>
        <CreateForm created=created on_change=on_change/>
        {move || created.get().map(|(name, token)| view! {
            <div class="card" role="region" aria-label="New API token" data-testid="new-token">
                <p>{format!("The token {name}: copy it now, it is shown only this once.")}</p>
                <pre class="mono" data-testid="new-token-value">{token}</pre>
            </div>
        })}
        {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="tokens-notice">{n}</p> })}
        <Transition fallback=|| view! { <p class="loading">"Loading tokens…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || tokens.refetch())>{list}</ErrorBoundary>
        </Transition>
    }
}

#[component]
fn CreateForm(
    created: RwSignal<Option<(String, String)>>,
    on_change: Callback<()>,
) -> impl IntoView {
    let api = use_api();
    let name = RwSignal::new(String::new());
    let scope = RwSignal::new("read".to_owned());
    let life = RwSignal::new("30".to_owned());
    let error = RwSignal::new(None::<String>);
    let create = Action::new_local(move |(): &()| async move {
        let label = name.get_untracked();
        let chosen = SCOPES
            .iter()
            .find(|(_, n, _)| *n == scope.get_untracked())
            .map_or(ApiTokenScope::Read, |(s, _, _)| *s);
        let days = LIVES
            .iter()
            .find(|(v, _, _)| *v == life.get_untracked())
            .and_then(|(_, d, _)| *d);
        match api.create_api_token(label.clone(), chosen, days).await {
            Ok(r) => {
                created.set(Some((label, r.token)));
                error.set(None);
                name.set(String::new());
                on_change.run(());
            }
            Err(e) => error.set(Some(e.full_message())),
        }
    });
    view! {
        <form class="card form" aria-label="Create an API token" data-testid="create-token"
            on:submit=move |ev| { ev.prevent_default(); create.dispatch(()); }>
            <label for="token-name">"Name"</label>
            <input id="token-name" type="text" required maxlength="64" placeholder="ci"
                data-testid="token-name" prop:value=name on:input=move |ev| name.set(event_target_value(&ev))/>
            <label for="token-scope">"Scope"</label>
            <select id="token-scope" data-testid="token-scope" on:change=move |ev| scope.set(event_target_value(&ev))>
                {SCOPES.iter().map(|(_, v, text)| view! { <option value={*v} selected={*v == "read"}>{*text}</option> }).collect_view()}
            </select>
            <label for="token-life">"Expires"</label>
            <select id="token-life" data-testid="token-life" on:change=move |ev| life.set(event_target_value(&ev))>
                {LIVES.iter().map(|(v, _, text)| view! { <option value={*v} selected={*v == "30"}>{*text}</option> }).collect_view()}
            </select>
            <button type="submit" class="button primary" data-testid="create-token-submit"
                disabled=move || create.pending().get()>"Create token"</button>
            {move || error.get().map(|e| view! { <p class="alert error" role="alert" data-testid="create-token-error">{e}</p> })}
        </form>
    }
}

#[component]
fn TokensTable(
    tokens: Vec<ApiTokenInfo>,
    notice: RwSignal<Option<String>>,
    on_change: Callback<()>,
) -> impl IntoView {
    let now = now_ms();
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="API tokens table"><table class="table" data-testid="tokens-table">
            <thead>
                <tr><th scope="col">"Name"</th><th scope="col">"Id"</th><th scope="col">"Scope"</th>
                    <th scope="col">"State"</th><th scope="col">"Created"</th><th scope="col">"Expires"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th></tr>
            </thead>
            <tbody>
                {tokens.into_iter().map(|t| view! { <TokenRow token=t now=now notice=notice on_change=on_change/> }).collect_view()}
            </tbody>
        </table></div>
    }
}

#[component]
fn TokenRow(
    token: ApiTokenInfo,
    now: f64,
    notice: RwSignal<Option<String>>,
    on_change: Callback<()>,
) -> impl IntoView {
    let api = use_api();
    let confirming = RwSignal::new(false);
    let expires = token.expires_at.as_ref().map(timestamp_ms);
    let state = if token.revoked_at.is_some() {
        "revoked"
    } else if expires.is_some_and(|e| e <= now) {
        "expired"
    } else {
        "live"
    };
    let scope = SCOPES
        .iter()
        .find(|(s, _, _)| *s as i32 == token.scope)
        .map_or("unknown", |(_, n, _)| *n);
    let id = token.id.clone();
    let revoke = Action::new_local(move |id: &String| {
        let id = id.clone();
        async move {
            match api.revoke_api_token(id.clone()).await {
                Ok(()) => {
                    notice.set(Some(format!("The token {id} was revoked.")));
                    on_change.run(());
                }
                Err(e) => notice.set(Some(e.full_message())),
            }
        }
    });
    let name = token.label.clone();
    let revoke_test = format!("revoke-token-{name}");
    view! {
        <tr data-testid=format!("token-row-{name}") data-state=state>
            <th scope="row">{name.clone()}</th>
            <td class="mono small">{token.id.clone()}</td>
            <td>{scope}</td>
            <td><span class="pill">{state}</span></td>
            <td>{token.created_at.as_ref().map(|t| local_time(timestamp_ms(t)))}</td>
            <td>{expires.map_or_else(|| "never".to_owned(), local_time)}</td>
            <td>
                <Show when=move || state == "live" && !confirming.get()>
                    <button type="button" class="button small danger-outline"
                        data-testid=revoke_test.clone() on:click=move |_| confirming.set(true)>
                        "Revoke"
                    </button>
                </Show>
                <Show when=move || confirming.get()>
                    <span role="group" aria-label="Confirm revocation">
                        "Every call with this token will be refused. "
                        <button type="button" class="button small danger" data-testid="confirm-revoke-token"
                            disabled=move || revoke.pending().get()
                            on:click={let id = id.clone(); move |_| { confirming.set(false); revoke.dispatch(id.clone()); }}>
                            "Revoke token"
                        </button>
                        <button type="button" class="button small" on:click=move |_| confirming.set(false)>"Cancel"</button>
                    </span>
                </Show>
            </td>
        </tr>
    }
}
