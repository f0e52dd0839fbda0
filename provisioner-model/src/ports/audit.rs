//! The audit log's storage port.
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use super::StoreError;
use crate::AuditEvent;

/// The audit log: appended to, read newest first.
#[async_trait]
pub trait AuditStore: Send + Sync + Debug {
    /// Appends `events` (one statement, all or none).
    async fn record_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError>;
    /// Up to `limit` events, newest first (by id), those with an id below `before` when
    /// given.
    async fn list_audit(
        &self,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<AuditEvent>, StoreError>;
    /// This log for its writer, which works off the request path: on its own connections
    /// where the database has them (PostgreSQL), behind the API's requests at a single
    /// writer (a SQLite file). `None` where both are served alike.
    fn background(&self) -> Option<Arc<dyn AuditStore>> {
        None
    }
}
