//! `/provisions/:id`: one provision, live — its stages, the region and size in use and the
//! choices passed over, the failure with its phase and reason — then every event with its
//! time, what cleanup deleted and what it could not, and "Retry with the same settings".
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::api::types::{CleanupOutcome, Provision, ProvisionStatus};
use crate::api::use_api;
use crate::browser::{local_time, random_uuid};
use crate::components::provision_progress::ProvisionProgress;
use crate::logic::providers::label;
use crate::logic::timeline::{cleanup_text, timeline};

#[component]
pub fn ProvisionDetailPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    view! {
        <p class="crumbs"><a href="/nodes">"Nodes"</a></p>
        // A new id (after a retry) builds a new view, with its own stream.
        {move || {
            let id = id();
            view! { <ProvisionView id=id/> }
        }}
    }
}

#[component]
fn ProvisionView(id: String) -> impl IntoView {
    let latest = RwSignal::new(None::<Provision>);
    let on_change = Callback::new(move |p: Provision| latest.set(Some(p)));
    let name = move || latest.with(|p| p.as_ref().map(|p| p.name.clone()).unwrap_or_default());
    view! {
        <div class="page-head">
            <h1 id="provision-title">"Provision "<span data-testid="provision-name">{name}</span></h1>
            <p class="lead mono muted small">{id.clone()}</p>
        </div>
        <ProvisionProgress id=id initial=None on_change=on_change labelled_by="provision-title"/>
        {move || latest.get().map(|p| view! {
            <Timeline p=p.clone()/>
            <Cleanup p=p.clone()/>
            <Retry p=p/>
        })}
    }
}

#[component]
fn Timeline(p: Provision) -> impl IntoView {
    let entries = timeline(&p);
    view! {
        <section class="card" aria-labelledby="timeline-title">
            <h2 id="timeline-title">"Events"</h2>
            <ol class="timeline" data-testid="provision-timeline">
                {entries
                    .into_iter()
                    .map(|e| view! {
                        <li class:failed=e.failed data-testid="timeline-entry">
                            <time class="mono small muted">{local_time(e.at_ms)}</time>
                            " "<strong>{e.title}</strong>
                            {(!e.detail.is_empty()).then(|| view! { <span class="detail">{format!(" — {}", e.detail)}</span> })}
                        </li>
                    })
                    .collect_view()}
            </ol>
        </section>
    }
}

#[component]
fn Cleanup(p: Provision) -> impl IntoView {
    let cleanup = p.cleanup.clone()?;
    // Without a recorded server id the cleanup looked the server up by its labels.
    let deleted = match p.server_id.is_empty() {
        true => format!(
            "Nothing left at {}: looked up by the provision's labels, with any firewall and SSH keys made for it",
            label(p.provider())
        ),
        false => format!(
            "Server {} deleted, with its firewall and SSH keys",
            p.server_id
        ),
    };
    let kept = match p.server_id.is_empty() {
        true => "Nothing deleted, as asked (keep on failure); no server id was recorded".to_owned(),
        false => format!(
            "Server {} kept, as asked (keep on failure): delete it at {} when done",
            p.server_id,
            label(p.provider())
        ),
    };
    let (server, server_bad) = cleanup_text(cleanup.server.as_ref(), &deleted, &kept);
    let (token, token_bad) = cleanup_text(cleanup.join_token.as_ref(), "Revoked", "Revoked");
    Some(view! {
        <section class="card" aria-labelledby="cleanup-title">
            <h2 id="cleanup-title">"Cleanup"</h2>
            <dl class="facts" data-testid="provision-cleanup">
                <dt>"Server"</dt><dd class:error=server_bad data-testid="cleanup-server">{server}</dd>
                <dt>"Join token"</dt><dd class:error=token_bad data-testid="cleanup-token">{token}</dd>
            </dl>
        </section>
    })
}

/// "Retry with the same settings" for a failed provision: a new provision (same cloud,
/// region and size choices, name, role, keys) whose page opens at once.
#[component]
fn Retry(p: Provision) -> impl IntoView {
    if p.status() != ProvisionStatus::Failed {
        return None;
    }
    // A kept server still holds the node's name at the cloud: the server refuses a retry.
    let kept = p
        .cleanup
        .as_ref()
        .and_then(|c| c.server.as_ref())
        .is_some_and(|s| s.outcome() == CleanupOutcome::Kept)
        && !p.server_id.is_empty();
    let api = use_api();
    let navigate = use_navigate();
    let error = RwSignal::new(None::<String>);
    // One key per page: a double click starts one provision.
    let request_id = StoredValue::new(random_uuid());
    let id = p.id.clone();
    let retry = Action::new_local(move |(): &()| {
        let id = id.clone();
        let navigate = navigate.clone();
        async move {
            match api.retry_provision(id, request_id.get_value()).await {
                Ok(next) => navigate(&format!("/provisions/{}", next.id), Default::default()),
                Err(e) => error.set(Some(e.full_message())),
            }
        }
    });
    let busy = retry.pending();
    Some(view! {
        <section class="card" aria-labelledby="retry-title">
            <h2 id="retry-title">"Try again"</h2>
            <p class="muted">{format!(
                "Starts a new provision of {} with the same cloud, region and size choices, role, SSH keys and image.",
                p.name
            )}</p>
            {kept.then(|| view! {
                <p class="notice" data-testid="retry-kept">{format!(
                    "Its server {} was kept and still holds the name {}: delete it at {} (or adopt it) before retrying.",
                    p.server_id, p.name, label(p.provider())
                )}</p>
            })}
            <button type="button" class="button primary" data-testid="retry-provision"
                disabled=move || kept || busy.get()
                on:click=move |_| { retry.dispatch(()); }>
                {move || if busy.get() { "Starting…" } else { "Retry with the same settings" }}
            </button>
            {move || error.get().map(|e| view! { <p class="error" role="alert" data-testid="retry-error">{e}</p> })}
        </section>
    })
}
