//! `AuditService`: the audit log, newest first, a page at a time.
use std::sync::Arc;

use levelrail_proto::audit::v1 as pb;
use levelrail_proto::audit::v1::audit_service_server::{AuditService, AuditServiceServer};
use tonic::{Request, Response, Status};

use crate::model::AuditEvent;
use crate::model::ports::AuditStore;

/// Events per page when the caller asks for none, and at most.
const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1_000;

/// The `AuditService` over the provisioner's store.
#[derive(Debug, Clone)]
pub struct AuditGrpc {
    store: Arc<dyn AuditStore>,
}

impl AuditGrpc {
    /// Handlers reading `store`.
    pub fn new(store: Arc<dyn AuditStore>) -> Self {
        AuditGrpc { store }
    }

    /// The tonic service, for the public (bearer-authenticated) listener.
    pub fn into_server(self) -> AuditServiceServer<Self> {
        AuditServiceServer::new(self)
    }
}

fn to_proto(e: AuditEvent) -> pb::AuditEvent {
    pb::AuditEvent {
        at: Some(super::convert::timestamp(e.at)),
        id: e.id,
        token_id: e.token_id,
        action: e.action,
        target: e.target,
        outcome: e.outcome,
        peer: e.peer,
    }
}

#[tonic::async_trait]
impl AuditService for AuditGrpc {
    async fn list_audit_events(
        &self,
        request: Request<pb::ListAuditEventsRequest>,
    ) -> Result<Response<pb::ListAuditEventsResponse>, Status> {
        let request = request.into_inner();
        let size = match request.page_size {
            0 => DEFAULT_PAGE,
            n if n <= MAX_PAGE => n,
            _ => {
                return Err(Status::invalid_argument(
                    "page_size: must be at most 1000 (0 means 100)",
                ));
            }
        };
        let before = match request.page_token.as_str() {
            "" => None,
            token if AuditEvent::is_id(token) => Some(token),
            _ => {
                return Err(Status::invalid_argument(
                    "page_token: not a page token of this log (pass next_page_token as given)",
                ));
            }
        };
        // One more than the page: whether another page follows.
        let mut events = self
            .store
            .list_audit(size + 1, before)
            .await
            .map_err(|e| Status::unavailable(format!("the audit log cannot be read: {e}")))?;
        let more = events.len() > size as usize;
        events.truncate(size as usize);
        let next_page_token = if more {
            events.last().map(|e| e.id.clone()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok(Response::new(pb::ListAuditEventsResponse {
            events: events.into_iter().map(to_proto).collect(),
            next_page_token,
        }))
    }
}
