//! `levelrail.credentials.internal.v1.CredentialBroker`. Never mounted on the public
//! listener or behind gRPC-web.
use std::pin::Pin;

use futures::Stream;
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::broker_failure::Reason;
use levelrail_proto::credentials::internal::v1::credential_broker_server::CredentialBroker;
use prost::Message as _;
use tonic::{Code, Request, Response, Status};

use super::convert::{grant_to_proto, provider_from_proto, provider_to_proto};
use crate::app::{BrokerState, Credentials};
use crate::model::CredentialsError;

/// The internal broker over gRPC.
#[derive(Debug, Clone)]
pub struct BrokerService {
    credentials: Credentials,
}

impl BrokerService {
    /// Serves grants from `credentials`.
    pub fn new(credentials: Credentials) -> Self {
        Self { credentials }
    }
}

type StateStream = Pin<Box<dyn Stream<Item = Result<bpb::CredentialsState, Status>> + Send>>;

#[tonic::async_trait]
impl CredentialBroker for BrokerService {
    async fn issue_access(
        &self,
        request: Request<bpb::IssueAccessRequest>,
    ) -> Result<Response<bpb::IssueAccessResponse>, Status> {
        let req = request.into_inner();
        let provider = provider_from_proto(req.provider)
            .map_err(|e| broker_status(CredentialsError::from(e)))?;
        let issued = match req.fresh {
            true => {
                self.credentials
                    .issue_fresh_access(provider, &req.purpose)
                    .await
            }
            false => self.credentials.issue_access(provider, &req.purpose).await,
        };
        let grant = issued.map_err(broker_status)?;
        Ok(Response::new(bpb::IssueAccessResponse {
            grant: Some(grant_to_proto(&grant)),
        }))
    }

    type WatchCredentialsStream = StateStream;

    async fn watch_credentials(
        &self,
        _request: Request<bpb::WatchCredentialsRequest>,
    ) -> Result<Response<StateStream>, Status> {
        let mut changes = self.credentials.changes();
        changes.mark_unchanged();
        let first = state_to_proto(self.credentials.broker_state().await?);
        let credentials = self.credentials.clone();
        let rest = futures::stream::unfold(
            (changes, credentials),
            |(mut changes, credentials)| async move {
                changes.changed().await.ok()?;
                changes.mark_unchanged();
                let state = credentials
                    .broker_state()
                    .await
                    .map(state_to_proto)
                    .map_err(Status::from);
                Some((state, (changes, credentials)))
            },
        );
        let stream = futures::StreamExt::chain(futures::stream::iter([Ok(first)]), rest);
        Ok(Response::new(Box::pin(stream)))
    }
}

/// The status of a refused grant, with its reason as a typed `BrokerFailure` detail.
fn broker_status(e: CredentialsError) -> Status {
    let status = Status::from(e);
    let reason = match status.code() {
        Code::FailedPrecondition => Reason::NotConnected,
        Code::Unavailable => Reason::Unavailable,
        Code::PermissionDenied => Reason::Refused,
        Code::InvalidArgument => Reason::Invalid,
        _ => Reason::Failed,
    };
    let details = bpb::BrokerFailure {
        reason: reason as i32,
    }
    .encode_to_vec();
    Status::with_details(status.code(), status.message(), details.into())
}

fn state_to_proto(state: BrokerState) -> bpb::CredentialsState {
    bpb::CredentialsState {
        credentials: state
            .credentials
            .into_iter()
            .map(|(provider, id)| bpb::StoredCredential {
                provider: provider_to_proto(provider) as i32,
                credential_id: id,
            })
            .collect(),
        api_tokens: state
            .api_tokens
            .into_iter()
            .map(|(id, entry)| super::api_tokens::digest_to_proto(id, &entry))
            .collect(),
    }
}
