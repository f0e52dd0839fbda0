//! A test double: every store trait in memory, behind one mutex, so every operation
//! (redemption included) is trivially atomic. It passes the same conformance suites as the
//! SQL store, and it can be told to fail (`fail_token_writes`). Tests that run on Tokio's
//! paused clock use it: the clock would jump ahead while SQLite answers on its own thread.
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::model::explain_failed_update;
use crate::model::ports::{NodeStore, StoreError};
use crate::model::provision::ProvisionId;
use crate::model::provision::{ClaimHolder, ProvisionRecord};
use crate::model::stored_time;
use crate::model::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, Node, NodeFilter, NodeId, NodeName,
    NodeServer,
};
use crate::model::{JoinTokenRecord, NewNode, RedeemError};

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Values every replica shares (`SharedStateStore`).
    pub(crate) shared: BTreeMap<String, Vec<u8>>,
    pub(super) tokens: BTreeMap<JoinTokenId, JoinTokenRecord>,
    nodes: BTreeMap<NodeId, Node>,
    certificates: BTreeMap<NodeId, String>,
    progress: BTreeMap<(String, InstallStep), (OffsetDateTime, Option<String>)>,
    /// Provisions (see `provisions::memory`).
    pub(crate) provisions: BTreeMap<ProvisionId, ProvisionRecord>,
    /// Node-name claims: name → holder.
    pub(crate) claims: BTreeMap<NodeName, ClaimHolder>,
    /// Orphaned servers (see `orphans::memory`).
    pub(crate) orphans: BTreeMap<crate::model::OrphanId, crate::model::Orphan>,
    /// The audit log, by id.
    audit: BTreeMap<String, crate::model::AuditEvent>,
    /// Join-token writes still to fail as if the database were down (tests).
    #[cfg(test)]
    token_outage: u32,
    /// Lease takes and renewals fail as if the database were down (tests).
    #[cfg(test)]
    pub(crate) lease_outage: bool,
    /// The queries `get_provisions` made, as the SQL store would (one per
    /// `PROVISIONS_PER_READ` ids).
    #[cfg(test)]
    pub(crate) batched_reads: usize,
}

impl State {
    /// `node` with the server its provision created, as the SQL store joins it.
    fn with_server(&self, node: &Node) -> Node {
        let server = node
            .provision_id
            .as_deref()
            .and_then(|id| ProvisionId::parse(id).ok())
            .and_then(|id| self.provisions.get(&id))
            .map(|p| {
                let (region, size) = p.placement_in_use();
                NodeServer {
                    provider: p.provider,
                    region: region.to_owned(),
                    size: size.to_owned(),
                    server_id: p.provider_server_id.clone(),
                }
            });
        Node {
            server,
            ..node.clone()
        }
    }
}

/// A `NodeStore` held in memory; lost when dropped.
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    /// An empty store.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The next `writes` join-token writes fail as if the database were unreachable.
    #[cfg(test)]
    pub(crate) fn fail_token_writes(&self, writes: u32) {
        self.lock().token_outage = writes;
    }

    /// Every lease take and renewal fails as if the database were unreachable, until
    /// `failing` is `false` again.
    #[cfg(test)]
    pub(crate) fn fail_lease_writes(&self, failing: bool) {
        self.lock().lease_outage = failing;
    }

    /// How many queries `get_provisions` made so far.
    #[cfg(test)]
    pub(crate) fn batched_reads(&self) -> usize {
        self.lock().batched_reads
    }

    /// A simulated outage for a join-token write, while one is armed.
    pub(super) fn outage(state: &mut State) -> Result<(), StoreError> {
        #[cfg(test)]
        if state.token_outage > 0 {
            state.token_outage -= 1;
            return Err(StoreError::Unavailable(Box::new(sqlx::Error::PoolTimedOut)));
        }
        let _ = state;
        Ok(())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied change: every
        // operation validates before it mutates, so the state is usable after poisoning.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(super) fn stored_token(t: &JoinTokenRecord) -> Result<JoinTokenRecord, StoreError> {
    let opt = |v: Option<OffsetDateTime>| v.map(stored_time).transpose();
    Ok(JoinTokenRecord {
        created_at: stored_time(t.created_at)?,
        expires_at: stored_time(t.expires_at)?,
        used_at: opt(t.used_at)?,
        revoked_at: opt(t.revoked_at)?,
        ..t.clone()
    })
}

#[async_trait]
impl NodeStore for MemoryStore {
    async fn create_join_token(&self, token: &JoinTokenRecord) -> Result<(), StoreError> {
        let stored = stored_token(token)?;
        let mut state = self.lock();
        Self::outage(&mut state)?;
        if state.tokens.contains_key(&token.id) {
            return Err(StoreError::Duplicate("join_tokens"));
        }
        state.tokens.insert(token.id.clone(), stored);
        Ok(())
    }

    async fn get_join_token(
        &self,
        id: &JoinTokenId,
    ) -> Result<Option<JoinTokenRecord>, StoreError> {
        Ok(self.lock().tokens.get(id).cloned())
    }

    async fn list_join_tokens(&self) -> Result<Vec<JoinTokenRecord>, StoreError> {
        Ok(self.lock().tokens.values().cloned().collect())
    }

    async fn revoke_join_token(
        &self,
        id: &JoinTokenId,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        match state.tokens.get_mut(id) {
            Some(t) if t.used_at.is_none() => {
                t.revoked_at.get_or_insert(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
        now: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        Self::outage(&mut state)?;
        let mut n = 0;
        for t in state.tokens.values_mut() {
            let live = t.used_at.is_none() && t.revoked_at.is_none();
            if live && t.provision_id.as_deref() == Some(provision_id) {
                t.revoked_at = Some(now);
                n += 1;
            }
        }
        Ok(n)
    }

    async fn redeem_join_token(
        &self,
        id: &JoinTokenId,
        secret_sha256: &[u8; 32],
        node_name: &NodeName,
        now: OffsetDateTime,
        new_node: &NewNode,
    ) -> Result<Node, RedeemError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        let Some(token) = state.tokens.get(id) else {
            return Err(RedeemError::Unknown);
        };
        if token
            .rejection(secret_sha256, Some(node_name), now)
            .is_some()
        {
            return Err(explain_failed_update(
                Some(token),
                secret_sha256,
                node_name,
                now,
            ));
        }
        // Validate everything before mutating, as a transaction would roll back.
        if state.nodes.values().any(|n| &n.name == node_name) {
            return Err(RedeemError::NameTaken);
        }
        if state.nodes.contains_key(&new_node.id) {
            return Err(StoreError::Duplicate("nodes").into());
        }
        let own_provision = new_node.provision_id.as_deref();
        match state.claims.get(node_name) {
            None => {}
            Some(ClaimHolder::Provision(p)) if Some(p.as_str()) == own_provision => {}
            Some(_) => return Err(RedeemError::NameTaken),
        }
        state
            .claims
            .insert(node_name.clone(), ClaimHolder::Node(new_node.id.clone()));
        let node = new_node.enrolled(node_name, now);
        if let Some(t) = state.tokens.get_mut(id) {
            t.used_at = Some(now);
            t.used_by_node = Some(node.id.clone());
        }
        state.nodes.insert(node.id.clone(), node.clone());
        state
            .certificates
            .insert(node.id.clone(), new_node.certificate_pem.clone());
        Ok(node)
    }

    async fn get_node(&self, id: &NodeId) -> Result<Option<Node>, StoreError> {
        let state = self.lock();
        Ok(state.nodes.get(id).map(|n| state.with_server(n)))
    }

    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError> {
        let state = self.lock();
        Ok(state
            .nodes
            .contains_key(id)
            .then(|| state.certificates.get(id).cloned())
            .flatten())
    }

    async fn list_nodes(&self) -> Result<Vec<Node>, StoreError> {
        self.list_nodes_page(u32::MAX, None, &NodeFilter::default())
            .await
    }

    async fn list_nodes_page(
        &self,
        limit: u32,
        after: Option<&NodeName>,
        filter: &NodeFilter,
    ) -> Result<Vec<Node>, StoreError> {
        let state = self.lock();
        let mut nodes: Vec<Node> = state
            .nodes
            .values()
            .filter(|n| after.is_none_or(|a| n.name.as_str() > a.as_str()))
            .map(|n| state.with_server(n))
            .filter(|n| filter.matches(n))
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        nodes.truncate(limit as usize);
        Ok(nodes)
    }

    async fn delete_node(&self, id: &NodeId) -> Result<bool, StoreError> {
        let mut state = self.lock();
        state
            .claims
            .retain(|_, holder| *holder != ClaimHolder::Node(id.clone()));
        Ok(state.nodes.remove(id).is_some())
    }

    async fn touch_node(
        &self,
        id: &NodeId,
        now: OffsetDateTime,
        report: &HeartbeatReport,
    ) -> Result<bool, StoreError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        let Some(node) = state.nodes.get_mut(id) else {
            return Ok(false);
        };
        node.last_seen_at = now;
        node.addresses.clone_from(&report.addresses);
        node.agent_version.clone_from(&report.agent_version);
        node.docker_version.clone_from(&report.docker_version);
        Ok(true)
    }

    async fn record_install_progress(
        &self,
        provision_id: &str,
        step: InstallStep,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = stored_time(now)?;
        self.lock()
            .progress
            .entry((provision_id.to_owned(), step))
            .or_insert((now, error.map(str::to_owned)));
        Ok(())
    }

    async fn list_install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, StoreError> {
        let state = self.lock();
        Ok(state
            .progress
            .iter()
            .filter(|((p, _), _)| p == provision_id)
            .map(|((_, step), (at, error))| InstallReport {
                step: *step,
                reported_at: *at,
                error: error.clone(),
            })
            .collect())
    }
}

#[async_trait]
impl crate::model::ports::AuditStore for MemoryStore {
    async fn record_audit(&self, events: &[crate::model::AuditEvent]) -> Result<(), StoreError> {
        let mut stored = Vec::with_capacity(events.len());
        for e in events {
            stored.push(crate::model::AuditEvent {
                at: stored_time(e.at)?,
                ..e.clone()
            });
        }
        let mut state = self.lock();
        if stored.iter().any(|e| state.audit.contains_key(&e.id)) {
            return Err(StoreError::Duplicate("audit_events"));
        }
        for e in stored {
            state.audit.insert(e.id.clone(), e);
        }
        Ok(())
    }

    async fn list_audit(
        &self,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<crate::model::AuditEvent>, StoreError> {
        let state = self.lock();
        let newest_first = state.audit.values().rev();
        Ok(newest_first
            .filter(|e| before.is_none_or(|b| e.id.as_str() < b))
            .take(limit as usize)
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn memory_store_passes_conformance() {
        super::super::conformance::run(Arc::new(MemoryStore::new())).await;
    }

    #[tokio::test]
    async fn memory_store_debug_dump_contains_no_token_secret() {
        let store = Arc::new(MemoryStore::new());
        let secrets = super::super::conformance::store_canary_tokens(store.as_ref()).await;

        let dump = format!("{:?}", store.lock());

        super::super::conformance::assert_dump_holds_no_secret(dump.as_bytes(), &secrets);
    }
}
