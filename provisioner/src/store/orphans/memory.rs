//! `OrphanStore` for the in-memory store, under the same mutex as the rest of its state.
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::model::ports::OrphanStore;
use crate::model::ports::StoreError;
use crate::model::stored_time;
use crate::model::{Orphan, OrphanId, OrphanState};
use crate::store::MemoryStore;

#[async_trait]
impl OrphanStore for MemoryStore {
    async fn record_orphan(&self, orphan: &Orphan) -> Result<Orphan, StoreError> {
        let stored = Orphan {
            first_seen: stored_time(orphan.first_seen)?,
            updated_at: stored_time(orphan.updated_at)?,
            ..orphan.clone()
        };
        let mut state = self.lock();
        let key = (stored.provider, stored.server_key());
        let existing = state
            .orphans
            .values_mut()
            .find(|o| (o.provider, o.server_key()) == key);
        if let Some(existing) = existing {
            if existing.state == OrphanState::Deleted {
                existing.state = OrphanState::Pending;
                existing.updated_at = stored.updated_at;
            }
            return Ok(existing.clone());
        }
        if state.orphans.contains_key(&stored.id) {
            return Err(StoreError::Duplicate("orphans"));
        }
        state.orphans.insert(stored.id.clone(), stored.clone());
        Ok(stored)
    }

    async fn get_orphan(&self, id: &OrphanId) -> Result<Option<Orphan>, StoreError> {
        Ok(self.lock().orphans.get(id).cloned())
    }

    async fn list_orphans(&self) -> Result<Vec<Orphan>, StoreError> {
        let mut all: Vec<Orphan> = self.lock().orphans.values().cloned().collect();
        all.sort_by(|a, b| (a.first_seen, &a.id).cmp(&(b.first_seen, &b.id)));
        Ok(all)
    }

    async fn record_orphan_attempt(
        &self,
        id: &OrphanId,
        seen: OrphanState,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<Option<Orphan>, StoreError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        let Some(o) = state.orphans.get_mut(id).filter(|o| o.state == seen) else {
            return Ok(None);
        };
        o.attempts = o.attempts.saturating_add(1);
        match error {
            None => o.state = OrphanState::Deleted,
            Some(e) => o.last_error = Some(e.to_owned()),
        }
        o.updated_at = now;
        Ok(Some(o.clone()))
    }

    async fn adopt_orphan(
        &self,
        id: &OrphanId,
        now: OffsetDateTime,
    ) -> Result<Option<Orphan>, StoreError> {
        let now = stored_time(now)?;
        let mut state = self.lock();
        let Some(o) = state
            .orphans
            .get_mut(id)
            .filter(|o| o.state == OrphanState::Pending)
        else {
            return Ok(None);
        };
        o.state = OrphanState::Adopted;
        o.updated_at = now;
        Ok(Some(o.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_store_passes_orphan_conformance() {
        super::super::conformance::run(&MemoryStore::new()).await;
    }
}
