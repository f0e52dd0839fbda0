//! `/nodes/:id`: one node — addresses, role and workload kinds, agent and Docker versions,
//! certificate expiry, last heartbeat, and the cloud, server id and provision it came from —
//! with Delete, whose confirmation says whether the server will be destroyed at its cloud.
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::api::types::{Node, Provider, WorkloadKind};
use crate::api::use_api;
use crate::browser::{local_time, now_ms};
use crate::components::error_view::error_fallback;
use crate::components::nodes_table::{cloud, role, status_pill};
use crate::logic::format::{ago, until};
use crate::logic::providers::label;
use crate::logic::stages::timestamp_ms;

#[component]
pub fn NodeDetailPage() -> impl IntoView {
    let api = use_api();
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let node = LocalResource::new(move || {
        let id = id();
        async move { api.get_node(id).await }
    });
    let body =
        move || Suspend::new(async move { node.await.map(|n| view! { <NodeView node=n/> }) });
    view! {
        <p class="crumbs"><a href="/nodes">"Nodes"</a></p>
        <Transition fallback=|| view! { <p class="loading">"Loading the node…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || node.refetch())>{body}</ErrorBoundary>
        </Transition>
    }
}

#[component]
fn NodeView(node: Node) -> impl IntoView {
    let now = now_ms();
    let (status, class) = status_pill(node.status());
    let time = |t: Option<&prost_types::Timestamp>| t.map(timestamp_ms);
    let seen = time(node.last_seen_at.as_ref());
    let expires = time(node.certificate_expires_at.as_ref());
    let kinds: Vec<&str> = node
        .workload_kinds()
        .map(|k| match k {
            WorkloadKind::Apps => "apps",
            WorkloadKind::Builds => "builds",
            WorkloadKind::Unspecified => "unknown",
        })
        .collect();
    let provision = (!node.provision_id.is_empty()).then(|| {
        let id = node.provision_id.clone();
        view! { <a href=format!("/provisions/{id}") data-testid="node-provision">{id.clone()}</a> }
    });
    let or_dash = |s: &str| {
        if s.is_empty() {
            "—".to_owned()
        } else {
            s.to_owned()
        }
    };
    view! {
        <div class="page-head row">
            <div>
                <h1 data-testid="node-name">{node.name.clone()}</h1>
                <p class="lead"><span class=class data-testid="node-status">{status}</span>" "<span class="mono muted small">{node.id.clone()}</span></p>
            </div>
        </div>
        <section aria-labelledby="node-facts" class="card">
            <h2 id="node-facts">"Details"</h2>
            <dl class="facts" data-testid="node-facts">
                <dt>"Role"</dt><dd>{format!("{} (workloads: {})", role(&node), kinds.join(", "))}</dd>
                <dt>"Addresses"</dt><dd class="mono">{or_dash(&node.addresses.join(", "))}</dd>
                <dt>"Agent version"</dt><dd class="mono">{node.agent_version.clone()}</dd>
                <dt>"Docker"</dt><dd class="mono">{if node.docker_version.is_empty() { "Not reported: no engine answered the last heartbeat".to_owned() } else { node.docker_version.clone() }}</dd>
                <dt>"Enrolled"</dt><dd>{time(node.enrolled_at.as_ref()).map(local_time).unwrap_or_default()}</dd>
                <dt>"Last heartbeat"</dt><dd data-testid="node-last-seen" title=seen.map(local_time)>{seen.map(|s| ago(s, now)).unwrap_or_else(|| "never".into())}</dd>
                <dt>"Certificate expires"</dt><dd data-testid="node-cert-expiry">{expires.map(|e| format!("{} ({})", local_time(e), until(e, now))).unwrap_or_default()}</dd>
                <dt>"Cloud"</dt><dd data-testid="node-cloud">{cloud(&node)}</dd>
                <dt>"Size"</dt><dd class="mono">{or_dash(&node.size)}</dd>
                <dt>"Server id"</dt><dd class="mono" data-testid="node-server-id">{or_dash(&node.server_id)}</dd>
                <dt>"Provision"</dt><dd>{provision.map(IntoAny::into_any).unwrap_or_else(|| "— (enrolled with a join token)".into_any())}</dd>
            </dl>
        </section>
        <DeleteNode node=node/>
    }
}

/// Delete, behind a confirmation that says what happens at the cloud.
#[component]
fn DeleteNode(node: Node) -> impl IntoView {
    let api = use_api();
    let navigate = use_navigate();
    let confirming = RwSignal::new(false);
    // The server destroys what the node's provision made: decided by the provision, as the
    // server decides.
    let provisioned = !node.provision_id.is_empty();
    let destroy = RwSignal::new(provisioned);
    let error = RwSignal::new(None::<String>);
    let cloud = match node.provider() {
        Provider::Unspecified => "its cloud",
        p => label(p),
    };
    let server = match node.server_id.as_str() {
        "" => "of its provision".to_owned(),
        id => id.to_owned(),
    };
    let id = node.id.clone();
    let delete = Action::new_local(move |destroy_server: &bool| {
        let (id, destroy_server) = (id.clone(), *destroy_server);
        let navigate = navigate.clone();
        async move {
            match api.delete_node(id, destroy_server).await {
                Ok(()) => navigate("/nodes", Default::default()),
                Err(e) => error.set(Some(e.full_message())),
            }
        }
    });
    let busy = delete.pending();
    let consequence = Signal::derive(move || match (provisioned, destroy.get()) {
        (true, true) => format!(
            "The server {server} and its firewall and SSH keys will be destroyed at {cloud}. This cannot be undone."
        ),
        (true, false) => format!(
            "Only the record goes: the server {server} keeps running at {cloud}, and keeps billing."
        ),
        (false, _) => {
            "This node was enrolled by hand: only its record goes, and its machine is not touched."
                .to_owned()
        }
    });
    view! {
        <section aria-labelledby="node-delete" class="card danger-zone">
            <h2 id="node-delete">"Delete"</h2>
            <p class="muted">"Deleting a node invalidates its identity: its heartbeats are refused from then on."</p>
            <Show when=move || !confirming.get()>
                <button type="button" class="button danger-outline" data-testid="delete-node" on:click=move |_| confirming.set(true)>"Delete node…"</button>
            </Show>
            <Show when=move || confirming.get()>
                <div role="group" aria-labelledby="node-delete" data-testid="delete-node-confirm">
                    <Show when=move || provisioned>
                        <label class="check">
                            <input type="checkbox" data-testid="delete-node-destroy" prop:checked=destroy
                                on:change=move |ev| destroy.set(event_target_checked(&ev))/>
                            {format!(" Also destroy the server at {cloud}")}
                        </label>
                    </Show>
                    <p class="notice" role="status" data-testid="delete-node-consequence">{consequence}</p>
                    <button type="button" class="button danger" data-testid="confirm-delete-node" disabled=busy
                        on:click=move |_| { delete.dispatch(provisioned && destroy.get_untracked()); }>
                        {move || if busy.get() { "Deleting…" } else if provisioned && destroy.get() { "Delete node and destroy server" } else { "Delete node" }}
                    </button>
                    " "
                    <button type="button" class="button" on:click=move |_| confirming.set(false)>"Cancel"</button>
                </div>
            </Show>
            {move || error.get().map(|e| view! { <p class="error" role="alert" data-testid="delete-node-error">{e}</p> })}
        </section>
    }
}
