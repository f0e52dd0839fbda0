//! `levelrail-cli nodes list|show|delete`: the node registry, over `NodesService`. A node's
//! ROLE is derived from its workload kinds the way a provision's role sets them: apps →
//! `general`, builds → `build`. DOCKER is the engine version the node's agent last read from
//! its local Docker socket.
use clap::Args;
use levelrail_proto::nodes::v1::nodes_service_client::NodesServiceClient;
use levelrail_proto::nodes::v1::{
    DeleteNodeRequest, GetNodeRequest, ListNodesRequest, Node, NodeStatus, WorkloadKind,
};
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::{key_values, rfc3339, rfc3339_or_empty, table};

/// The argument of `nodes show` and `nodes delete`.
#[derive(Debug, Args)]
pub(crate) struct NodeIdArg {
    /// The node id (`node_…`), as `nodes list` shows it.
    #[arg(value_name = "ID")]
    id: String,
}

impl NodeIdArg {
    fn id(&self) -> Result<String, CliError> {
        let id = self.id.trim();
        if id.is_empty() {
            return Err(CliError::usage("a node id is required"));
        }
        Ok(id.to_owned())
    }
}

/// The filters of `nodes list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only nodes that are `online` or `offline`.
    #[arg(long, value_name = "STATUS")]
    status: Option<String>,
    /// Only nodes provisioned at this cloud: hetzner, digitalocean, aws, azure or gcp.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Only nodes of this role: `general` (apps) or `build` (builds).
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
}

impl ListArgs {
    /// The request's filters, each flag checked before anything is sent.
    fn filters(&self) -> Result<ListNodesRequest, CliError> {
        let status = match self.status.as_deref() {
            None => NodeStatus::Unspecified,
            Some("online") => NodeStatus::Online,
            Some("offline") => NodeStatus::Offline,
            Some(_) => return Err(CliError::usage("--status must be online or offline")),
        };
        let workload_kind = match self.role.as_deref() {
            None => WorkloadKind::Unspecified,
            Some("general") => WorkloadKind::Apps,
            Some("build") => WorkloadKind::Builds,
            Some(_) => return Err(CliError::usage("--role must be general or build")),
        };
        let provider = match &self.provider {
            None => 0,
            Some(p) => crate::provider::parse(Some(p))? as i32,
        };
        Ok(ListNodesRequest {
            status: status as i32,
            workload_kind: workload_kind as i32,
            provider,
            ..Default::default()
        })
    }
}

/// `nodes list [--status S] [--provider P] [--role R]`.
pub(crate) async fn list(args: &ListArgs, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let filters = args.filters()?;
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .list_nodes(ListNodesRequest {
                page_size: 1_000,
                page_token,
                ..filters.clone()
            })
            .await
            .map_err(|s| ctx.rpc_error(&s))?
            .into_inner();
        all.extend(page.nodes);
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    if ctx.json() {
        let nodes: Vec<Value> = all.iter().map(node_json).collect();
        ctx.print_json(&json!({ "nodes": nodes }))?;
        return Ok(Outcome::Success);
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|n| {
            vec![
                n.id.clone(),
                n.name.clone(),
                status_name(n.status),
                or_dash(role(&n.workload_kinds)),
                or_dash(n.addresses.join(",")),
                or_dash(n.docker_version.clone()),
                n.last_seen_at
                    .as_ref()
                    .map_or_else(|| "never".to_owned(), crate::output::rfc3339_seconds),
            ]
        })
        .collect();
    ctx.print(&table(
        &[
            "ID",
            "NAME",
            "STATUS",
            "ROLE",
            "ADDRESSES",
            "DOCKER",
            "LAST SEEN",
        ],
        &rows,
    ))?;
    Ok(Outcome::Success)
}

/// `nodes show <id>`.
pub(crate) async fn show(args: NodeIdArg, ctx: &mut Context<'_, '_>) -> Result<Outcome, CliError> {
    let id = args.id()?;
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    let node = client
        .get_node(GetNodeRequest { id: id.clone() })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "node", &id))?
        .into_inner()
        .node
        .ok_or_else(|| CliError::failed("the server returned no node"))?;
    if ctx.json() {
        ctx.print_json(&json!({ "node": node_json(&node) }))?;
        return Ok(Outcome::Success);
    }
    let kinds: Vec<&str> = node.workload_kinds.iter().map(|k| kind_name(*k)).collect();
    ctx.print(&key_values(&[
        ("id", node.id.clone()),
        ("name", node.name.clone()),
        ("status", status_name(node.status)),
        ("role", role(&node.workload_kinds)),
        ("workload kinds", kinds.join(", ")),
        ("addresses", node.addresses.join(", ")),
        ("agent version", node.agent_version.clone()),
        ("docker", docker_or_why(&node.docker_version)),
        ("enrolled", rfc3339_or_empty(node.enrolled_at.as_ref())),
        (
            "last seen",
            node.last_seen_at
                .as_ref()
                .map_or_else(|| "never".to_owned(), crate::output::rfc3339_seconds),
        ),
        (
            "certificate expires",
            rfc3339_or_empty(node.certificate_expires_at.as_ref()),
        ),
        ("provision", node.provision_id.clone()),
        ("provider", server_provider(&node)),
        ("region", node.region.clone()),
        ("size", node.size.clone()),
        ("server id", node.server_id.clone()),
    ]))?;
    Ok(Outcome::Success)
}

/// The arguments of `nodes delete`.
#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    node: NodeIdArg,
    /// Also delete the VM and its dedicated resources (firewall, SSH keys) at the provider,
    /// for a node created by `nodes provision`. Without it only the record is removed and
    /// the VM keeps running (and billing).
    #[arg(long)]
    destroy_server: bool,
}

/// `nodes delete <id> [--destroy-server]`: the record, and the VM when asked.
pub(crate) async fn delete(
    args: DeleteArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    let id = args.node.id()?;
    let mut client = NodesServiceClient::new(ctx.channel().await?);
    client
        .delete_node(DeleteNodeRequest {
            id: id.clone(),
            destroy_server: args.destroy_server,
        })
        .await
        .map_err(|s| ctx.rpc_error_about(&s, "node", &id))?;
    if ctx.json() {
        ctx.print_json(&json!({ "id": id, "deleted": true, "vm_deleted": args.destroy_server }))?;
    } else if args.destroy_server {
        ctx.print(&format!("node {id} deleted, and its VM with it"))?;
    } else {
        ctx.print(&format!(
            "node {id} deleted; the VM, if any, is not deleted"
        ))?;
    }
    Ok(Outcome::Success)
}

fn or_dash(text: String) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text
    }
}

/// `online`, `offline`, or `unknown` when the server does not say.
fn status_name(value: i32) -> String {
    match NodeStatus::try_from(value) {
        Ok(NodeStatus::Online) => "online".to_owned(),
        Ok(NodeStatus::Offline) => "offline".to_owned(),
        Ok(NodeStatus::Unspecified) => "unknown".to_owned(),
        Err(_) => format!("unknown({value})"),
    }
}

/// The workload kind as the API names it: `apps`, `builds`.
fn kind_name(value: i32) -> &'static str {
    match WorkloadKind::try_from(value) {
        Ok(WorkloadKind::Apps) => "apps",
        Ok(WorkloadKind::Builds) => "builds",
        Ok(WorkloadKind::Unspecified) | Err(_) => "unknown",
    }
}

/// The role(s) the workload kinds amount to: `general` (apps), `build` (builds), both
/// comma-separated, or empty for a node that accepts nothing.
fn role(kinds: &[i32]) -> String {
    let has = |kind: WorkloadKind| kinds.contains(&(kind as i32));
    let mut roles = Vec::new();
    if has(WorkloadKind::Apps) {
        roles.push("general");
    }
    if has(WorkloadKind::Builds) {
        roles.push("build");
    }
    roles.join(",")
}

/// One node as JSON.
fn node_json(node: &Node) -> Value {
    let kinds: Vec<&str> = node.workload_kinds.iter().map(|k| kind_name(*k)).collect();
    json!({
        "id": node.id,
        "name": node.name,
        "status": status_name(node.status),
        "role": role(&node.workload_kinds),
        "workload_kinds": kinds,
        "addresses": node.addresses,
        "agent_version": node.agent_version,
        "docker_version": node.docker_version,
        "enrolled_at": node.enrolled_at.as_ref().map(rfc3339),
        "last_seen_at": node.last_seen_at.as_ref().map(rfc3339),
        "provision_id": node.provision_id,
        "certificate_expires_at": node.certificate_expires_at.as_ref().map(rfc3339),
        "provider": server_provider(node),
        "region": node.region,
        "size": node.size,
        "server_id": node.server_id,
    })
}

/// The cloud a node was provisioned at; empty for one enrolled by hand.
fn server_provider(node: &Node) -> String {
    match node.provider {
        0 => String::new(),
        p => crate::provider::name_of(p),
    }
}

/// A node's Docker engine version, or why there is none.
fn docker_or_why(version: &str) -> String {
    if version.is_empty() {
        "not reported (no engine answered the agent's last heartbeat, or none yet)".to_owned()
    } else {
        version.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_follows_the_workload_kinds() {
        let apps = WorkloadKind::Apps as i32;
        let builds = WorkloadKind::Builds as i32;
        assert_eq!(role(&[apps]), "general");
        assert_eq!(role(&[builds]), "build");
        assert_eq!(role(&[builds, apps]), "general,build");
        assert_eq!(role(&[]), "");
    }

    #[test]
    fn an_unknown_status_is_shown_not_fatal() {
        assert_eq!(status_name(NodeStatus::Online as i32), "online");
        assert_eq!(status_name(0), "unknown");
        assert_eq!(status_name(9), "unknown(9)");
    }
}
