//! AuditService calls: the audit log panel.
use levelrail_proto::audit::v1::{ListAuditEventsRequest, ListAuditEventsResponse};

use super::{Api, ApiError};

impl Api {
    /// One page of the audit log, newest first: `page_size` events after `page_token`
    /// (empty: the newest).
    pub async fn list_audit_events(
        &self,
        page_size: u32,
        page_token: String,
    ) -> Result<ListAuditEventsResponse, ApiError> {
        self.unary(
            "/levelrail.audit.v1.AuditService/ListAuditEvents",
            ListAuditEventsRequest {
                page_size,
                page_token,
            },
        )
        .await
    }
}
