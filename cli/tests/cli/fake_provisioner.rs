//! A fake `ProvisionerService`: provisions behind a mutex (newest first), paging by offset,
//! idempotent Provision by `request_id`, queued failures, and scripted WatchProvision
//! streams (each call plays the next script, which may end early or with an error, as a
//! dropped stream does). Plus builders for realistic provisions.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use levelrail_proto::provisioner::v1::provisioner_service_server::{
    ProvisionerService, ProvisionerServiceServer,
};
use levelrail_proto::provisioner::v1::*;
use prost_types::Timestamp;
use tonic::{Request, Response, Status};

use crate::helpers::authorize;

/// 2026-01-02T03:04:05Z: every fixture time is an offset from it.
const BASE: i64 = 1_767_323_045;

/// `BASE + seconds`.
pub(crate) fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp {
        seconds: BASE + seconds,
        nanos: 0,
    })
}

/// A hetzner provision `name` in `creating`, generation 1, created at `BASE + created`.
pub(crate) fn creating(id: &str, name: &str, created: i64) -> Provision {
    Provision {
        id: id.into(),
        provider: 1,
        region: "fsn1".into(),
        size: "cx22".into(),
        name: name.into(),
        role: Role::General as i32,
        status: ProvisionStatus::Creating as i32,
        created_at: at(created),
        updated_at: at(created),
        generation: 1,
        stages: vec![StageTiming {
            status: ProvisionStatus::Creating as i32,
            entered_at: at(created),
        }],
        ..Provision::default()
    }
}

/// `p` one change later: the next generation at `BASE + seconds`, with a new stage when the
/// status changes and `edit` applied.
pub(crate) fn next(
    p: &Provision,
    status: ProvisionStatus,
    seconds: i64,
    edit: impl FnOnce(&mut Provision),
) -> Provision {
    let mut p = p.clone();
    p.generation += 1;
    p.updated_at = at(seconds);
    if p.status != status as i32 {
        p.stages.push(StageTiming {
            status: status as i32,
            entered_at: at(seconds),
        });
    }
    p.status = status as i32;
    edit(&mut p);
    p
}

/// The seven states of a provision that reaches `ready` 53 s after it started.
pub(crate) fn happy_path(id: &str) -> Vec<Provision> {
    use ProvisionStatus::*;
    let step = |s: InstallStep| move |p: &mut Provision| p.install_step = s as i32;
    let g1 = creating(id, "web-1", 0);
    let g2 = next(&g1, Booting, 4, |p| p.ip_address = "203.0.113.7".into());
    let g3 = next(&g2, Installing, 31, step(InstallStep::DockerReady));
    let g4 = next(&g3, Installing, 45, step(InstallStep::AgentVerified));
    let g5 = next(&g4, Installing, 50, step(InstallStep::AgentStarted));
    let g6 = next(&g5, Enrolling, 52, |_| {});
    let g7 = next(&g6, Ready, 53, |p| p.node_id = "node_1".into());
    vec![g1, g2, g3, g4, g5, g6, g7]
}

/// What `nodes provisions watch` prints for [`happy_path`].
pub(crate) const HAPPY_LINES: [&str; 7] = [
    "03:04:05  creating",
    "03:04:09  booting  ip 203.0.113.7  creating took 4s",
    "03:04:36  installing (docker ready)  booting took 27s",
    "03:04:50  installing (agent verified)",
    "03:04:55  installing (agent started)",
    "03:04:57  enrolling  installing took 21s",
    "03:04:58  ready  node node_1  enrolling took 1s  total 53s",
];

/// One scripted WatchProvision call: the states it sends, then how it ends.
pub(crate) type Script = Vec<Result<Provision, Status>>;

/// What the fake holds and saw.
#[derive(Debug, Default)]
pub(crate) struct ProvisionerState {
    /// Stored provisions, newest first.
    pub(crate) provisions: Vec<Provision>,
    pub(crate) provision_requests: Vec<ProvisionRequest>,
    pub(crate) list_requests: Vec<ListProvisionsRequest>,
    pub(crate) get_requests: Vec<String>,
    pub(crate) cancel_requests: Vec<String>,
    pub(crate) retry_requests: Vec<RetryProvisionRequest>,
    pub(crate) watch_requests: Vec<String>,
    /// Each WatchProvision call plays the next script; with none left it is NOT_FOUND.
    pub(crate) watch_scripts: VecDeque<Script>,
    /// The next Provision calls fail with these, in order.
    pub(crate) provision_failures: VecDeque<Status>,
    /// Cancel answers with the provision still in flight (the unwind runs in background).
    pub(crate) cancel_in_background: bool,
    /// The catalog; ListRegions is FAILED_PRECONDITION while it is empty (no credential).
    pub(crate) regions: Vec<Region>,
    pub(crate) sizes: Vec<Size>,
    /// Every ListRegions / ListSizes request as (provider, region).
    pub(crate) catalog_requests: Vec<(i32, String)>,
    pub(crate) authorizations: Vec<String>,
}

/// The service over shared state.
#[derive(Clone)]
pub(crate) struct FakeProvisioner(Arc<Mutex<ProvisionerState>>);

impl FakeProvisioner {
    /// The tonic service for `state`.
    pub(crate) fn server(state: Arc<Mutex<ProvisionerState>>) -> ProvisionerServiceServer<Self> {
        ProvisionerServiceServer::new(Self(state))
    }

    fn check<T>(&self, request: &Request<T>) -> Result<MutexGuard<'_, ProvisionerState>, Status> {
        let mut state = self.0.lock().expect("provisioner lock");
        authorize(request, &mut state.authorizations)?;
        Ok(state)
    }
}

fn not_found() -> Status {
    Status::not_found("provision not found")
}

#[tonic::async_trait]
impl ProvisionerService for FakeProvisioner {
    async fn list_regions(
        &self,
        request: Request<ListRegionsRequest>,
    ) -> Result<Response<ListRegionsResponse>, Status> {
        let mut state = self.check(&request)?;
        let provider = request.into_inner().provider;
        state.catalog_requests.push((provider, String::new()));
        if state.regions.is_empty() {
            return Err(Status::failed_precondition(
                "no credential is stored for this provider",
            ));
        }
        Ok(Response::new(ListRegionsResponse {
            regions: state.regions.clone(),
        }))
    }

    async fn list_sizes(
        &self,
        request: Request<ListSizesRequest>,
    ) -> Result<Response<ListSizesResponse>, Status> {
        let mut state = self.check(&request)?;
        let request = request.into_inner();
        state
            .catalog_requests
            .push((request.provider, request.region.clone()));
        if !state.regions.iter().any(|r| r.id == request.region) {
            return Err(Status::invalid_argument("region: unknown region"));
        }
        Ok(Response::new(ListSizesResponse {
            sizes: state.sizes.clone(),
        }))
    }

    async fn provision(
        &self,
        request: Request<ProvisionRequest>,
    ) -> Result<Response<ProvisionResponse>, Status> {
        let mut state = self.check(&request)?;
        let request = request.into_inner();
        state.provision_requests.push(request.clone());
        if let Some(status) = state.provision_failures.pop_front() {
            return Err(status);
        }
        let earlier = state
            .provision_requests
            .iter()
            .position(|r| r.request_id == request.request_id)
            .expect("just pushed");
        let id = format!("npv_{}", earlier + 1);
        if let Some(existing) = state.provisions.iter().find(|p| p.id == id) {
            return Ok(Response::new(ProvisionResponse {
                provision: Some(existing.clone()),
            }));
        }
        let mut provision = creating(&id, &request.name, 0);
        provision.provider = request.provider;
        provision.region = request.region;
        provision.size = request.size;
        provision.role = request.role;
        provision.keep_on_failure = request.keep_on_failure;
        state.provisions.insert(0, provision.clone());
        Ok(Response::new(ProvisionResponse {
            provision: Some(provision),
        }))
    }

    async fn get_provision(
        &self,
        request: Request<GetProvisionRequest>,
    ) -> Result<Response<GetProvisionResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.get_requests.push(id.clone());
        let provision = state.provisions.iter().find(|p| p.id == id).cloned();
        Ok(Response::new(GetProvisionResponse {
            provision: Some(provision.ok_or_else(not_found)?),
        }))
    }

    async fn list_provisions(
        &self,
        request: Request<ListProvisionsRequest>,
    ) -> Result<Response<ListProvisionsResponse>, Status> {
        let mut state = self.check(&request)?;
        let request = request.into_inner();
        state.list_requests.push(request.clone());
        let size = match request.page_size {
            0 => 50,
            n => n as usize,
        };
        let start: usize = request.page_token.parse().unwrap_or(0);
        let end = (start + size).min(state.provisions.len());
        let next_page_token = if end < state.provisions.len() {
            end.to_string()
        } else {
            String::new()
        };
        Ok(Response::new(ListProvisionsResponse {
            provisions: state.provisions[start.min(end)..end].to_vec(),
            next_page_token,
        }))
    }

    async fn retry_provision(
        &self,
        request: Request<RetryProvisionRequest>,
    ) -> Result<Response<ProvisionResponse>, Status> {
        let mut state = self.check(&request)?;
        let request = request.into_inner();
        state.retry_requests.push(request.clone());
        let failed = state
            .provisions
            .iter()
            .find(|p| p.id == request.id)
            .cloned()
            .ok_or_else(not_found)?;
        if failed.status != ProvisionStatus::Failed as i32 {
            return Err(Status::failed_precondition(
                "only a failed provision can be retried",
            ));
        }
        let id = format!("npv_{}", state.provisions.len() + 1);
        let mut provision = creating(&id, &failed.name, 300);
        provision.provider = failed.provider;
        provision.region = failed.region;
        provision.size = failed.size;
        provision.role = failed.role;
        state.provisions.insert(0, provision.clone());
        Ok(Response::new(ProvisionResponse {
            provision: Some(provision),
        }))
    }

    type WatchProvisionStream =
        tokio_stream::Iter<std::vec::IntoIter<Result<ProvisionEvent, Status>>>;

    async fn watch_provision(
        &self,
        request: Request<WatchProvisionRequest>,
    ) -> Result<Response<Self::WatchProvisionStream>, Status> {
        let mut state = self.check(&request)?;
        state.watch_requests.push(request.into_inner().id);
        let script = state.watch_scripts.pop_front().ok_or_else(not_found)?;
        let events: Vec<Result<ProvisionEvent, Status>> = script
            .into_iter()
            .map(|r| r.map(|p| ProvisionEvent { provision: Some(p) }))
            .collect();
        Ok(Response::new(tokio_stream::iter(events)))
    }

    async fn cancel_provision(
        &self,
        request: Request<CancelProvisionRequest>,
    ) -> Result<Response<CancelProvisionResponse>, Status> {
        let mut state = self.check(&request)?;
        let id = request.into_inner().id;
        state.cancel_requests.push(id.clone());
        let background = state.cancel_in_background;
        let provision = state
            .provisions
            .iter_mut()
            .find(|p| p.id == id)
            .ok_or_else(not_found)?;
        let terminal = [
            ProvisionStatus::Ready as i32,
            ProvisionStatus::Failed as i32,
        ];
        if terminal.contains(&provision.status) {
            return Err(Status::failed_precondition(
                "the provision has already finished",
            ));
        }
        if !background {
            *provision = next(provision, ProvisionStatus::Failed, 60, |p| {
                p.failed_phase = p.stages[p.stages.len() - 2].status;
                p.failure_reason = "cancelled by operator".into();
            });
        }
        Ok(Response::new(CancelProvisionResponse {
            provision: Some(provision.clone()),
        }))
    }
}
