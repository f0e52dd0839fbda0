//! The enrolled nodes: name, status, role, last seen.
use leptos::prelude::*;

use crate::api::types::{Node, NodeStatus, WorkloadKind};
use crate::browser::{local_time, now_ms};
use crate::logic::format::ago;
use crate::logic::stages::timestamp_ms;

/// The node table (or a note when there are none).
#[component]
pub fn NodesTable(nodes: Vec<Node>) -> impl IntoView {
    if nodes.is_empty() {
        return view! {
            <p class="empty" data-testid="nodes-empty">
                "No nodes yet. Add one with the wizard, or enroll a machine you already have with a join token."
            </p>
        }
        .into_any();
    }
    let now = now_ms();
    view! {
        <table class="table" data-testid="nodes-table">
            <thead>
                <tr><th scope="col">"Name"</th><th scope="col">"Status"</th><th scope="col">"Role"</th>
                    <th scope="col">"Last seen"</th><th scope="col">"Addresses"</th><th scope="col">"Agent"</th><th scope="col">"Docker"</th></tr>
            </thead>
            <tbody>
                {nodes.into_iter().map(|n| row(n, now)).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn row(n: Node, now: f64) -> impl IntoView {
    let (status, class) = match n.status() {
        NodeStatus::Online => ("Online", "pill ok"),
        NodeStatus::Offline => ("Offline", "pill warn"),
        NodeStatus::Unspecified => ("Unknown", "pill muted"),
    };
    let seen = n.last_seen_at.as_ref().map(timestamp_ms);
    view! {
        <tr data-testid=format!("node-row-{}", n.name)>
            <th scope="row">{n.name.clone()}</th>
            <td><span class=class>{status}</span></td>
            <td>{role(&n)}</td>
            <td title=seen.map(local_time)>{seen.map(|s| ago(s, now)).unwrap_or_else(|| "never".into())}</td>
            <td class="mono">{n.addresses.join(", ")}</td>
            <td class="mono">{n.agent_version.clone()}</td>
            {docker_cell(&n.docker_version)}
        </tr>
    }
}

fn role(n: &Node) -> String {
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
