//! `/settings/audit-log`: every state-changing call to the operator API, newest first, a
//! page of 50 at a time: when, which token, what it called on what, the outcome and the
//! peer. Only an admin token may read it; another sees the server's refusal.
use leptos::prelude::*;

use crate::api::types::AuditEvent;
use crate::api::use_api;
use crate::browser::local_time;
use crate::components::error_view::error_fallback;
use crate::components::nodes_table::push_once;
use crate::logic::stages::timestamp_ms;

/// Events per page.
const PAGE: u32 = 50;

#[component]
pub fn AuditLogPage() -> impl IntoView {
    let api = use_api();
    // The page tokens of the pages before this one (the first page's is empty).
    let tokens = RwSignal::new(Vec::<String>::new());
    let page = LocalResource::new(move || {
        let token = tokens.with(|t| t.last().cloned().unwrap_or_default());
        async move { api.list_audit_events(PAGE, token).await }
    });
    let body = move || {
        Suspend::new(async move {
            page.await.map(|p| {
                let next = p.next_page_token.clone();
                let first = tokens.with_untracked(Vec::is_empty);
                view! {
                    {table(p.events)}
                    <nav class="pager" aria-label="Audit log pages">
                        <button type="button" class="button small" data-testid="audit-newer" disabled=first
                            on:click=move |_| tokens.update(|t| { t.pop(); })>"Newer"</button>
                        <button type="button" class="button small" data-testid="audit-older" disabled=next.is_empty()
                            on:click=move |_| tokens.update(|t| push_once(t, &next))>"Older"</button>
                    </nav>
                }
            })
        })
    };
    view! {
        <div class="page-head">
            <p class="crumbs">"Settings"</p>
            <h1>"Audit log"</h1>
            <p class="lead">"Every call that changed something (provisions, cancels and retries, node and orphan deletes, credentials, API tokens) and every call a token was not allowed to make. Reads that succeed are not recorded; secrets never are."</p>
        </div>
        <div class="actions"><button type="button" class="button" data-testid="audit-refresh" on:click=move |_| page.refetch()>"Refresh"</button></div>
        <Transition fallback=|| view! { <p class="loading">"Loading the audit log…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || page.refetch())>{body}</ErrorBoundary>
        </Transition>
    }
}

fn table(events: Vec<AuditEvent>) -> AnyView {
    if events.is_empty() {
        return view! { <p class="empty" data-testid="audit-empty">"Nothing recorded yet."</p> }
            .into_any();
    }
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="Audit log table">
            <table class="table" data-testid="audit-table">
                <thead>
                    <tr><th scope="col">"When"</th><th scope="col">"Call"</th><th scope="col">"On"</th>
                        <th scope="col">"Outcome"</th><th scope="col">"Token"</th><th scope="col">"Peer"</th></tr>
                </thead>
                <tbody>
                    {events.into_iter().map(|e| {
                        let ok = e.outcome == "OK";
                        view! {
                            <tr data-testid="audit-row">
                                <td class="mono small">{e.at.as_ref().map(|t| local_time(timestamp_ms(t))).unwrap_or_default()}</td>
                                <th scope="row">{e.action}</th>
                                <td class="mono">{e.target}</td>
                                <td><span class=if ok { "pill ok" } else { "pill warn" }>{e.outcome}</span></td>
                                <td class="mono">{e.token_id}</td>
                                <td class="mono">{e.peer}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
