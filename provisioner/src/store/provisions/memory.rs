//! `ProvisionStore` for the in-memory store: the same mutex as the node half, so a claim
//! and its provision (or its node) change together.
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::model::ports::StoreError;
use crate::model::ports::{ChangeFeed, NodeStore as _, ProvisionStore, SharedStateStore, WaitView};
use crate::model::provision::{ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord};
use crate::model::provision::{ProvisionId, ProvisionStatus};
use crate::model::stored_time;
use crate::model::{JoinTokenRecord, NodeName};
use crate::store::MemoryStore;
use crate::store::memory::stored_token;

#[async_trait]
impl ProvisionStore for MemoryStore {
    async fn wait_view(&self, id: &ProvisionId) -> Result<Option<WaitView>, StoreError> {
        let Some(record) = self.get_provision(id).await? else {
            return Ok(None);
        };
        let progress = self.list_install_progress(id.as_str()).await?;
        let used_by = match &record.join_token_id {
            Some(token) => self
                .get_join_token(token)
                .await?
                .and_then(|t| t.used_by_node),
            None => None,
        };
        let enrolled_node = match used_by {
            Some(node) if self.get_node(&node).await?.is_some() => Some(node),
            _ => None,
        };
        Ok(Some(WaitView {
            record,
            progress,
            enrolled_node,
        }))
    }

    async fn insert_provision_with_token(
        &self,
        record: &ProvisionRecord,
        token: Option<&JoinTokenRecord>,
    ) -> Result<ProvisionRecord, InsertProvisionError> {
        let stored = record.stored()?;
        let token = token.map(stored_token).transpose()?;
        let mut state = self.lock();
        if token.is_some() {
            MemoryStore::outage(&mut state)?;
        }
        if let Some(request) = &record.request_id
            && let Some(existing) = state
                .provisions
                .values()
                .find(|p| p.request_id.as_ref() == Some(request))
        {
            return Err(InsertProvisionError::Replayed(Box::new(existing.clone())));
        }
        if state.claims.contains_key(&record.name) {
            return Err(InsertProvisionError::NameTaken);
        }
        if state.provisions.contains_key(&record.id) {
            return Err(StoreError::Duplicate("provisions").into());
        }
        if token
            .as_ref()
            .is_some_and(|t| state.tokens.contains_key(&t.id))
        {
            return Err(StoreError::Duplicate("join_tokens").into());
        }
        state.claims.insert(
            record.name.clone(),
            ClaimHolder::Provision(record.id.clone()),
        );
        if let Some(token) = token {
            state.tokens.insert(token.id.clone(), token);
        }
        state.provisions.insert(record.id.clone(), stored.clone());
        Ok(stored)
    }

    async fn get_provision(&self, id: &ProvisionId) -> Result<Option<ProvisionRecord>, StoreError> {
        Ok(self.lock().provisions.get(id).cloned())
    }

    async fn get_provision_by_request(
        &self,
        request_id: &str,
    ) -> Result<Option<ProvisionRecord>, StoreError> {
        let state = self.lock();
        Ok(state
            .provisions
            .values()
            .find(|p| p.request_id.as_deref() == Some(request_id))
            .cloned())
    }

    async fn get_provisions(
        &self,
        ids: &[ProvisionId],
    ) -> Result<Vec<ProvisionRecord>, StoreError> {
        let mut state = self.lock();
        state.batched_reads += ids.len().div_ceil(crate::model::ports::PROVISIONS_PER_READ);
        Ok(ids
            .iter()
            .filter_map(|id| state.provisions.get(id).cloned())
            .collect())
    }

    async fn list_provisions(
        &self,
        limit: u32,
        after: Option<&PageCursor>,
    ) -> Result<Vec<ProvisionRecord>, StoreError> {
        let state = self.lock();
        let mut all: Vec<&ProvisionRecord> = state
            .provisions
            .values()
            .filter(|p| after.is_none_or(|c| (p.created_at, &p.id) < (c.created_at, &c.id)))
            .collect();
        all.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(all.into_iter().take(limit as usize).cloned().collect())
    }

    async fn update_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<Option<ProvisionRecord>, StoreError> {
        let mut state = self.lock();
        let Some(current) = state.provisions.get(&record.id) else {
            return Ok(None);
        };
        if current.generation != record.generation || current.lease_epoch != record.lease_epoch {
            return Ok(None);
        }
        let mut next = record.next_version()?;
        // Immutable fields and the lease keep their stored values.
        let current = current.clone();
        next.lease_owner = if next.status.is_terminal() {
            None
        } else {
            current.lease_owner.clone()
        };
        next.lease_until = if next.status.is_terminal() {
            None
        } else {
            current.lease_until
        };
        next.lease_epoch = current.lease_epoch;
        next = immutable_from(&current, next);
        if next.status == ProvisionStatus::Failed {
            let ours = ClaimHolder::Provision(next.id.clone());
            if state.claims.get(&next.name) == Some(&ours) {
                state.claims.remove(&next.name);
            }
        }
        state.provisions.insert(next.id.clone(), next.clone());
        Ok(Some(next))
    }

    async fn acquire_lease(
        &self,
        id: &ProvisionId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Option<u64>, StoreError> {
        let (now, until) = (stored_time(now)?, stored_time(until)?);
        let mut state = self.lock();
        if state.lease_outage {
            return Err(StoreError::Unavailable(Box::new(sqlx::Error::PoolTimedOut)));
        }
        let Some(p) = state.provisions.get_mut(id) else {
            return Ok(None);
        };
        let expired = p.lease_until.is_none_or(|t| t < now);
        let ours = p.lease_owner.as_deref() == Some(owner);
        if p.status.is_terminal() || !(p.lease_owner.is_none() || expired || ours) {
            return Ok(None);
        }
        if !ours || expired {
            p.lease_epoch += 1;
        }
        p.lease_owner = Some(owner.to_owned());
        p.lease_until = Some(until);
        Ok(Some(p.lease_epoch))
    }

    async fn renew_leases(
        &self,
        owner: &str,
        ids: &[ProvisionId],
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<(ProvisionId, u64)>, StoreError> {
        let (now, until) = (stored_time(now)?, stored_time(until)?);
        let mut state = self.lock();
        if state.lease_outage {
            return Err(StoreError::Unavailable(Box::new(sqlx::Error::PoolTimedOut)));
        }
        let mut renewed = Vec::new();
        for id in ids {
            let Some(p) = state.provisions.get_mut(id) else {
                continue;
            };
            let live = p.lease_until.is_some_and(|t| t >= now);
            if p.lease_owner.as_deref() == Some(owner) && live && !p.status.is_terminal() {
                p.lease_until = Some(until);
                renewed.push((id.clone(), p.lease_epoch));
            }
        }
        Ok(renewed)
    }

    async fn release_lease(&self, id: &ProvisionId, owner: &str) -> Result<(), StoreError> {
        let mut state = self.lock();
        if let Some(p) = state.provisions.get_mut(id)
            && p.lease_owner.as_deref() == Some(owner)
        {
            p.lease_owner = None;
            p.lease_until = None;
            p.lease_epoch += 1;
        }
        Ok(())
    }

    async fn database_time(&self) -> Result<Option<OffsetDateTime>, StoreError> {
        Ok(None)
    }

    async fn change_feed(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreError> {
        Ok(None)
    }

    async fn list_resumable(&self, now: OffsetDateTime) -> Result<Vec<ProvisionId>, StoreError> {
        let now = stored_time(now)?;
        let state = self.lock();
        Ok(state
            .provisions
            .values()
            .filter(|p| !p.status.is_terminal())
            .filter(|p| p.lease_owner.is_none() || p.lease_until.is_none_or(|t| t < now))
            .map(|p| p.id.clone())
            .collect())
    }

    async fn name_claim(&self, name: &NodeName) -> Result<Option<ClaimHolder>, StoreError> {
        Ok(self.lock().claims.get(name).cloned())
    }
}

/// `next` with the fields an update never changes taken from `current`.
fn immutable_from(current: &ProvisionRecord, next: ProvisionRecord) -> ProvisionRecord {
    ProvisionRecord {
        provider: current.provider,
        region: current.region.clone(),
        size: current.size.clone(),
        name: current.name.clone(),
        role: current.role,
        request_id: current.request_id.clone(),
        keep_on_failure: current.keep_on_failure,
        ssh_public_keys: current.ssh_public_keys.clone(),
        ssh_source_cidr: current.ssh_source_cidr.clone(),
        image: current.image.clone(),
        control_plane_addr: current.control_plane_addr.clone(),
        credential_id: current.credential_id.clone(),
        created_at: current.created_at,
        ..next
    }
}

#[async_trait]
impl SharedStateStore for MemoryStore {
    async fn shared_value(&self, name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        Ok(self
            .lock()
            .shared
            .entry(name.to_owned())
            .or_insert_with(|| value.to_vec())
            .clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn memory_store_passes_provision_conformance() {
        super::super::conformance::run(Arc::new(MemoryStore::new())).await;
    }
}
