//! In-memory `CredentialStore`: for tests and the demo mode. Nothing survives a restart.
use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use tokio::sync::RwLock;

use super::codec::{in_card_order, to_stored_precision};
use super::{ApiTokenRecord, CredentialRecord, CredentialStore, StoreError};
use crate::domain::{ProviderId, Verification};

/// A `CredentialStore` held in process memory. Timestamps are normalised exactly as the
/// SQL backends store them (UTC, microseconds), so all backends answer alike.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Keyed by provider: at most one credential each, iterated in card order.
    credentials: BTreeMap<ProviderId, CredentialRecord>,
    api_tokens: HashMap<String, ApiTokenRecord>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

/// `record` as a SQL backend would return it after storing it.
fn normalised(record: &CredentialRecord) -> Result<CredentialRecord, StoreError> {
    let mut record = record.clone();
    record.saved_at = to_stored_precision(record.saved_at)?;
    record.verification = record
        .verification
        .map(|v| normalised_verification(&v))
        .transpose()?;
    Ok(record)
}

fn normalised_verification(v: &Verification) -> Result<Verification, StoreError> {
    Ok(Verification {
        checked_at: to_stored_precision(v.checked_at)?,
        ..v.clone()
    })
}

#[async_trait]
impl CredentialStore for MemoryStore {
    async fn put_credential(&self, record: &CredentialRecord) -> Result<(), StoreError> {
        let record = normalised(record)?;
        let mut state = self.state.write().await;
        state.credentials.insert(record.provider, record);
        Ok(())
    }

    async fn get_credential(
        &self,
        provider: ProviderId,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        Ok(self.state.read().await.credentials.get(&provider).cloned())
    }

    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError> {
        let state = self.state.read().await;
        Ok(in_card_order(state.credentials.values().cloned().collect()))
    }

    async fn delete_credential(&self, provider: ProviderId) -> Result<bool, StoreError> {
        Ok(self
            .state
            .write()
            .await
            .credentials
            .remove(&provider)
            .is_some())
    }

    async fn record_verification(
        &self,
        provider: ProviderId,
        credential_id: &str,
        verification: &Verification,
    ) -> Result<bool, StoreError> {
        let verification = normalised_verification(verification)?;
        let mut state = self.state.write().await;
        match state.credentials.get_mut(&provider) {
            Some(current) if current.id == credential_id => {
                current.verification = Some(verification);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn list_credentials_not_on_kek(
        &self,
        kek_id: &str,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let state = self.state.read().await;
        let stale = state
            .credentials
            .values()
            .filter(|r| r.kek_id != kek_id)
            .cloned()
            .collect();
        Ok(in_card_order(stale))
    }

    async fn swap_envelope(
        &self,
        credential_id: &str,
        expected: &[u8],
        new_envelope: &[u8],
        new_kek_id: &str,
    ) -> Result<bool, StoreError> {
        let mut state = self.state.write().await;
        let row = state
            .credentials
            .values_mut()
            .find(|r| r.id == credential_id && r.envelope == expected);
        match row {
            Some(row) => {
                row.envelope = new_envelope.to_vec();
                row.kek_id = new_kek_id.to_owned();
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        let token = ApiTokenRecord {
            created_at: to_stored_precision(token.created_at)?,
            ..token.clone()
        };
        let mut state = self.state.write().await;
        state.api_tokens.insert(token.id.clone(), token);
        Ok(())
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        Ok(self.state.read().await.api_tokens.get(id).cloned())
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
        let mut all: Vec<_> = self
            .state
            .read()
            .await
            .api_tokens
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(all)
    }

    async fn count_api_tokens(&self) -> Result<u64, StoreError> {
        Ok(self.state.read().await.api_tokens.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::MemoryStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_store_passes_conformance() {
        super::super::conformance::run(Arc::new(MemoryStore::new())).await;
    }
}
