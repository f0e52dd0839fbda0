//! The enrolled nodes, a page at a time (by name), filtered by status, cloud and role on
//! the server: a fleet of any size loads one page. Each name opens the node's detail page.
use leptos::prelude::*;

use crate::api::types::{ListNodesRequest, Node, NodeStatus, Provider, WorkloadKind};
use crate::api::use_api;
use crate::browser::{local_time, now_ms};
use crate::components::error_view::error_fallback;
use crate::logic::format::ago;
use crate::logic::providers::label;
use crate::logic::stages::timestamp_ms;

/// Nodes per page.
const PAGE: u32 = 50;

/// The filters and the page being shown.
#[derive(Debug, Clone, Default, PartialEq)]
struct Query {
    status: i32,
    provider: i32,
    kind: i32,
    /// The page tokens of the pages before this one (the first page's is empty).
    tokens: Vec<String>,
}

impl Query {
    fn request(&self) -> ListNodesRequest {
        ListNodesRequest {
            page_size: PAGE,
            page_token: self.tokens.last().cloned().unwrap_or_default(),
            status: self.status,
            provider: self.provider,
            workload_kind: self.kind,
        }
    }
}

/// The node list with its filters and pages. `refresh` refetches the page when it changes.
#[component]
pub fn NodesTable(refresh: Signal<u32>) -> impl IntoView {
    let api = use_api();
    let query = RwSignal::new(Query::default());
    let page = LocalResource::new(move || {
        refresh.track();
        let request = query.with(Query::request);
        async move { api.list_nodes(request).await }
    });
    // A filter change starts again at the first page.
    let set = move |f: fn(&mut Query, i32)| {
        move |ev: leptos::ev::Event| {
            let v = event_target_value(&ev).parse().unwrap_or(0);
            query.update(|q| {
                f(q, v);
                q.tokens.clear();
            });
        }
    };
    let body = move || {
        Suspend::new(async move {
            page.await.map(|p| {
                let next = p.next_page_token.clone();
                let number = query.with_untracked(|q| q.tokens.len());
                let first = number * PAGE as usize + 1;
                let shown = p.nodes.len();
                view! {
                    {table(p.nodes)}
                    <nav class="pager" aria-label="Node pages">
                        <button type="button" class="button small" data-testid="nodes-prev"
                            disabled=number == 0
                            on:click=move |_| query.update(|q| { q.tokens.pop(); })>
                            "Previous"
                        </button>
                        <span class="muted small" data-testid="nodes-range" aria-live="polite">
                            {if shown == 0 { String::new() } else { format!("Nodes {first}–{} (page {})", first + shown - 1, number + 1) }}
                        </span>
                        <button type="button" class="button small" data-testid="nodes-next"
                            disabled=next.is_empty()
                            on:click=move |_| query.update(|q| push_once(&mut q.tokens, &next))>
                            "Next"
                        </button>
                    </nav>
                }
            })
        })
    };
    view! {
        <form class="filters" aria-label="Filter nodes" on:submit=|ev| ev.prevent_default()>
            <label>"Status "
                <select data-testid="nodes-filter-status" on:change=set(|q, v| q.status = v)>
                    <option value="0">"Any"</option>
                    <option value=NodeStatus::Online as i32>"Online"</option>
                    <option value=NodeStatus::Offline as i32>"Offline"</option>
                </select>
            </label>
            <label>"Cloud "
                <select data-testid="nodes-filter-provider" on:change=set(|q, v| q.provider = v)>
                    <option value="0">"Any"</option>
                    {[Provider::Hetzner, Provider::Digitalocean, Provider::Aws, Provider::Azure, Provider::Gcp]
                        .into_iter()
                        .map(|p| view! { <option value=p as i32>{label(p)}</option> })
                        .collect_view()}
                </select>
            </label>
            <label>"Role "
                <select data-testid="nodes-filter-role" on:change=set(|q, v| q.kind = v)>
                    <option value="0">"Any"</option>
                    <option value=WorkloadKind::Apps as i32>"General (apps)"</option>
                    <option value=WorkloadKind::Builds as i32>"Build"</option>
                </select>
            </label>
        </form>
        <Transition fallback=|| view! { <p class="loading">"Loading nodes…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || page.refetch())>{body}</ErrorBoundary>
        </Transition>
    }
}

/// Moves to the page of `token`, unless that is already the page shown (a second click
/// on Next while the page loads).
pub fn push_once(tokens: &mut Vec<String>, token: &str) {
    if tokens.last().map(String::as_str) != Some(token) {
        tokens.push(token.to_owned());
    }
}

/// The table of one page (or a note when it is empty).
fn table(nodes: Vec<Node>) -> AnyView {
    if nodes.is_empty() {
        return view! {
            <p class="empty" data-testid="nodes-empty">
                "No nodes match. Add one with the wizard, or enroll a machine you already have with a join token."
            </p>
        }
        .into_any();
    }
    let now = now_ms();
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="Nodes table">
            <table class="table" data-testid="nodes-table">
                <thead>
                    <tr><th scope="col">"Name"</th><th scope="col">"Status"</th><th scope="col">"Role"</th>
                        <th scope="col">"Cloud"</th><th scope="col">"Last seen"</th><th scope="col">"Addresses"</th>
                        <th scope="col">"Agent"</th><th scope="col">"Docker"</th></tr>
                </thead>
                <tbody>
                    {nodes.into_iter().map(|n| row(n, now)).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

fn row(n: Node, now: f64) -> impl IntoView {
    let (status, class) = status_pill(n.status());
    let seen = n.last_seen_at.as_ref().map(timestamp_ms);
    view! {
        <tr data-testid=format!("node-row-{}", n.name)>
            <th scope="row"><a href=format!("/nodes/{}", n.id)>{n.name.clone()}</a></th>
            <td><span class=class>{status}</span></td>
            <td>{role(&n)}</td>
            <td>{cloud(&n)}</td>
            <td title=seen.map(local_time)>{seen.map(|s| ago(s, now)).unwrap_or_else(|| "never".into())}</td>
            <td class="mono">{n.addresses.join(", ")}</td>
            <td class="mono">{n.agent_version.clone()}</td>
            {docker_cell(&n.docker_version)}
        </tr>
    }
}

/// The status word and its pill class.
pub fn status_pill(s: NodeStatus) -> (&'static str, &'static str) {
    match s {
        NodeStatus::Online => ("Online", "pill ok"),
        NodeStatus::Offline => ("Offline", "pill warn"),
        NodeStatus::Unspecified => ("Unknown", "pill muted"),
    }
}

/// Where a node runs: `Hetzner · fsn1`, or how it came without a provision.
pub fn cloud(n: &Node) -> String {
    match n.provider() {
        Provider::Unspecified => "Enrolled by hand".into(),
        p => format!("{} · {}", label(p), n.region),
    }
}

/// `general`, `build`, both, or a dash.
pub fn role(n: &Node) -> String {
    let kinds: Vec<&str> = n
        .workload_kinds()
        .filter_map(|k| match k {
            WorkloadKind::Apps => Some("general"),
            WorkloadKind::Builds => Some("build"),
            WorkloadKind::Unspecified => None,
        })
        .collect();
    match kinds.is_empty() {
        true => "—".into(),
        false => kinds.join(" + "),
    }
}

/// The Docker engine version the node's agent last read from its local socket; a node
/// whose engine did not answer cannot run workloads, so it says so.
fn docker_cell(version: &str) -> impl IntoView + use<> {
    if version.is_empty() {
        view! {
            <td><span class="pill warn" title="No Docker engine answered the agent's last heartbeat (or it has not sent one yet): workloads cannot run here.">"Not reported"</span></td>
        }
        .into_any()
    } else {
        view! { <td class="mono">{version.to_owned()}</td> }.into_any()
    }
}
