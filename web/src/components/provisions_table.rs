//! The provisions, newest first, each name linking to its detail page and a button
//! reopening its live progress.
use leptos::prelude::*;

use crate::api::types::Provision;
use crate::browser::{local_time, now_ms};
use crate::logic::format::ago;
use crate::logic::providers::label;
use crate::logic::stages::{status_label, status_word, timestamp_ms};

/// The provisions table (or a note when there are none). `on_open` gets a provision id.
#[component]
pub fn ProvisionsTable(provisions: Vec<Provision>, on_open: Callback<String>) -> impl IntoView {
    if provisions.is_empty() {
        return view! { <p class="empty" data-testid="provisions-empty">"No provisions yet."</p> }
            .into_any();
    }
    let now = now_ms();
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="Provisions table">
        <table class="table" data-testid="provisions-table">
            <thead>
                <tr><th scope="col">"Name"</th><th scope="col">"Provider"</th><th scope="col">"Region"</th>
                    <th scope="col">"Size"</th><th scope="col">"Status"</th><th scope="col">"Started"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th></tr>
            </thead>
            <tbody>
                {provisions.into_iter().map(|p| row(p, now, on_open)).collect_view()}
            </tbody>
        </table>
        </div>
    }
    .into_any()
}

fn row(p: Provision, now: f64, on_open: Callback<String>) -> impl IntoView {
    let word = status_word(p.status());
    let created = p.created_at.as_ref().map(timestamp_ms);
    let detail = match p.status() {
        crate::api::types::ProvisionStatus::Failed => Some(p.failure_reason.clone()),
        _ => None,
    };
    let id = p.id.clone();
    view! {
        <tr data-testid=format!("provision-row-{}", p.name) data-status=word>
            <th scope="row"><a href=format!("/provisions/{}", p.id) data-testid=format!("provision-link-{}", p.name)>{p.name.clone()}</a></th>
            <td>{label(p.provider())}</td>
            <td class="mono">{p.region.clone()}</td>
            <td class="mono">{p.size.clone()}</td>
            <td>
                <span class=format!("pill status-{word}")>{status_label(p.status())}</span>
                {detail.map(|d| view! { <span class="muted small">{format!(" {d}")}</span> })}
            </td>
            <td title=created.map(local_time)>{created.map(|c| ago(c, now)).unwrap_or_default()}</td>
            <td>
                <button type="button" class="button small" data-testid=format!("open-progress-{}", p.name)
                    aria-label=format!("View progress of {}", p.name)
                    on:click=move |_| on_open.run(id.clone())>
                    "View progress"
                </button>
            </td>
        </tr>
    }
}
