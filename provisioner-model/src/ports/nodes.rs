//! The node registry's storage port.
use std::fmt::Debug;

use async_trait::async_trait;
use time::OffsetDateTime;

use super::StoreError;
use crate::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, JoinTokenRecord, NewNode, Node,
    NodeFilter, NodeId, NodeName, RedeemError,
};

/// The provisioner's node registry storage.
#[async_trait]
pub trait NodeStore: Send + Sync + Debug {
    /// Stores a new join token. `StoreError::Duplicate` if its id exists.
    async fn create_join_token(&self, token: &JoinTokenRecord) -> Result<(), StoreError>;
    /// A join token by id.
    async fn get_join_token(&self, id: &JoinTokenId)
    -> Result<Option<JoinTokenRecord>, StoreError>;
    /// Every join token, ordered by id.
    async fn list_join_tokens(&self) -> Result<Vec<JoinTokenRecord>, StoreError>;
    /// Revokes an unused token (revoking a revoked one again keeps its first `revoked_at`).
    /// `false` when the token is unknown or already used.
    async fn revoke_join_token(
        &self,
        id: &JoinTokenId,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// Revokes every unused, unrevoked token bound to a provision; returns how many.
    async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
        now: OffsetDateTime,
    ) -> Result<u64, StoreError>;
    /// Atomically redeems a token and creates the node it enrolls, in one transaction:
    /// the token must exist with this secret hash (compared in constant time), be unused,
    /// unrevoked, unexpired at `now` and either unbound or bound to `node_name`. The node
    /// gets `enrolled_at = last_seen_at = now`. A taken node name fails the whole
    /// transaction with `RedeemError::NameTaken` and leaves the token unused.
    async fn redeem_join_token(
        &self,
        id: &JoinTokenId,
        secret_sha256: &[u8; 32],
        node_name: &NodeName,
        now: OffsetDateTime,
        new_node: &NewNode,
    ) -> Result<Node, RedeemError>;
    /// A node by id.
    async fn get_node(&self, id: &NodeId) -> Result<Option<Node>, StoreError>;
    /// The client certificate (PEM) issued to a node, when it exists and one was kept.
    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError>;
    /// Every node, ordered by name.
    async fn list_nodes(&self) -> Result<Vec<Node>, StoreError>;
    /// Up to `limit` nodes that pass `filter`, ordered by name, those named after `after`
    /// when given.
    async fn list_nodes_page(
        &self,
        limit: u32,
        after: Option<&NodeName>,
        filter: &NodeFilter,
    ) -> Result<Vec<Node>, StoreError>;
    /// Deletes a node; `true` when it existed.
    async fn delete_node(&self, id: &NodeId) -> Result<bool, StoreError>;
    /// Records a heartbeat: last-seen time, and the report's addresses, agent and Docker
    /// versions. `false` when the node does not exist.
    async fn touch_node(
        &self,
        id: &NodeId,
        now: OffsetDateTime,
        report: &HeartbeatReport,
    ) -> Result<bool, StoreError>;
    /// Records that a provision reached an install step, or (with `error`) that the step
    /// failed. Idempotent: a repeated report keeps the first one.
    async fn record_install_progress(
        &self,
        provision_id: &str,
        step: InstallStep,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
    /// The install steps a provision reported, in step order.
    async fn list_install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, StoreError>;
}
