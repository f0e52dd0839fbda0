//! An in-memory `CloudProvider` for workflow tests: deterministic, idempotent creates by
//! provision id (like every real client), a dedicated firewall per provision, servers that
//! run after a set number of polls, per-call fault injection and call counters.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use levelrail_clouds::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, PollTarget, ProviderError,
    ProviderId, Region, ServerInfo, ServerState, Size,
};

/// A fault: the next `times` calls of `method` (or every call until `until`) fail with
/// `error`; with `after_effect` the call takes effect first and only its answer is lost.
#[derive(Debug, Clone)]
struct Fault {
    method: &'static str,
    times: usize,
    until: Option<Instant>,
    error: ProviderError,
    after_effect: bool,
}

#[derive(Debug, Clone)]
struct Server {
    name: String,
    region: String,
    size: String,
    provision_id: String,
    control_plane: String,
    polls: u32,
    broken: bool,
}

#[derive(Debug)]
struct State {
    servers: BTreeMap<u64, Server>,
    next_id: u64,
    firewalls: BTreeSet<String>,
    calls: BTreeMap<&'static str, usize>,
    created: BTreeMap<String, usize>,
    user_data: BTreeMap<String, String>,
    faults: Vec<Fault>,
    running_after_polls: u32,
    /// Servers one `poll_servers` call reads (1: the cloud has no such call).
    poll_batch: usize,
    /// `poll_servers` finds none of the servers (`get_server` still reads them).
    batch_finds_none: bool,
    create_delay: Duration,
    /// Creates in flight now, and the most ever in flight at once.
    creating: (usize, usize),
    refused_grants: usize,
    full_regions: Vec<String>,
    revoked_tokens: Vec<String>,
    tokens_seen: Vec<String>,
}

/// The fake cloud.
#[derive(Debug)]
pub(crate) struct FakeProvider {
    state: Mutex<State>,
}

impl Default for FakeProvider {
    fn default() -> Self {
        let state = State {
            servers: BTreeMap::new(),
            next_id: 1000,
            firewalls: BTreeSet::new(),
            calls: BTreeMap::new(),
            created: BTreeMap::new(),
            user_data: BTreeMap::new(),
            faults: Vec::new(),
            running_after_polls: 2,
            poll_batch: 1,
            batch_finds_none: false,
            create_delay: Duration::ZERO,
            creating: (0, 0),
            refused_grants: 0,
            full_regions: Vec::new(),
            revoked_tokens: Vec::new(),
            tokens_seen: Vec::new(),
        };
        FakeProvider {
            state: Mutex::new(state),
        }
    }
}

fn error(kind: ErrorKind, code: &str) -> ProviderError {
    ProviderError::new(ProviderId::Hetzner, kind, code, &format!("fake {code}"))
}

impl FakeProvider {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `times` calls of `method` fail with `kind`/`code`.
    pub(crate) fn fail_next(
        &self,
        method: &'static str,
        times: usize,
        kind: ErrorKind,
        code: &str,
    ) {
        self.fail_next_with(method, times, error(kind, code));
    }

    /// The next `times` calls of `method` fail with `error`.
    pub(crate) fn fail_next_with(&self, method: &'static str, times: usize, error: ProviderError) {
        self.lock().faults.push(Fault {
            method,
            times,
            until: None,
            error,
            after_effect: false,
        });
    }

    /// Every call of `method` for `storm` (by Tokio's clock) fails, alternately with a 429
    /// asking to wait `retry_after` and a 503.
    pub(crate) fn storm(&self, method: &'static str, storm: Duration, retry_after: Duration) {
        let until = Some(Instant::now() + storm);
        let mut limited = error(ErrorKind::RateLimited, "rate_limit_exceeded").with_status(429);
        limited.retry_after = Some(retry_after);
        let unavailable = error(ErrorKind::Unavailable, "service_unavailable").with_status(503);
        let mut s = self.lock();
        for error in [limited, unavailable] {
            s.faults.push(Fault {
                method,
                times: usize::MAX,
                until,
                error,
                after_effect: false,
            });
        }
    }

    /// Creates in `regions` fail for lack of capacity (Hetzner's `resource_unavailable`).
    pub(crate) fn set_full_regions(&self, regions: &[&str]) {
        self.lock().full_regions = regions.iter().map(|r| (*r).to_owned()).collect();
    }

    /// Creates take `delay` before they take effect.
    pub(crate) fn set_create_delay(&self, delay: Duration) {
        self.lock().create_delay = delay;
    }

    /// The most `create_server` calls ever in flight at once.
    pub(crate) fn most_creates_at_once(&self) -> usize {
        self.lock().creating.1
    }

    /// Every grant used so far is revoked (as a provider revokes a leaked token early).
    pub(crate) fn revoke_grants_seen(&self) {
        let mut s = self.lock();
        let seen = s.tokens_seen.clone();
        s.revoked_tokens.extend(seen);
    }

    /// Records a call made with the grant `token`; refuses it with a 401 when the grant
    /// `expired` or the cloud revoked the token.
    pub(crate) fn admit_grant(&self, token: &str, expired: bool) -> Result<(), ProviderError> {
        let mut s = self.lock();
        if !s.tokens_seen.iter().any(|t| t == token) {
            s.tokens_seen.push(token.to_owned());
        }
        if expired || s.revoked_tokens.iter().any(|t| t == token) {
            s.refused_grants += 1;
            return Err(error(ErrorKind::Unauthorized, "unauthorized").with_status(401));
        }
        Ok(())
    }

    /// Calls refused because their grant had expired or was revoked.
    pub(crate) fn refused_grants(&self) -> usize {
        self.lock().refused_grants
    }

    /// The next call of `method` takes effect but its answer is lost (a timeout).
    pub(crate) fn lose_next_answer(&self, method: &'static str) {
        let error = error(ErrorKind::Unavailable, "timeout");
        self.lock().faults.push(Fault {
            method,
            times: 1,
            until: None,
            error,
            after_effect: true,
        });
    }

    /// Every armed fault is gone: the cloud answers normally again.
    pub(crate) fn heal(&self) {
        self.lock().faults.clear();
    }

    /// A server labelled for `control_plane` and `provision` appears, made by no provision
    /// of this bench (another control plane's database, or a lost record); its id.
    pub(crate) fn plant_server(&self, control_plane: &str, provision: &str, name: &str) -> String {
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        let server = Server {
            name: name.into(),
            region: "fsn1".into(),
            size: "cx22".into(),
            provision_id: provision.into(),
            control_plane: control_plane.into(),
            polls: 0,
            broken: false,
        };
        st.servers.insert(id, server);
        id.to_string()
    }

    /// Servers report running after `polls` `get_server` calls (`u32::MAX`: never).
    pub(crate) fn set_running_after(&self, polls: u32) {
        self.lock().running_after_polls = polls;
    }

    /// One `poll_servers` call reads up to `batch` servers (by their provisions' labels).
    pub(crate) fn set_poll_batch(&self, batch: usize) {
        self.lock().poll_batch = batch;
    }

    /// `poll_servers` finds none of the servers from now on, as a list that does not show
    /// them (a tag they lack); `get_server` still reads each.
    pub(crate) fn set_batch_finds_none(&self) {
        self.lock().batch_finds_none = true;
    }

    /// Every server polled so far, with how often: (provision, polls).
    pub(crate) fn polls(&self) -> Vec<(String, u32)> {
        self.lock()
            .servers
            .values()
            .map(|s| (s.provision_id.clone(), s.polls))
            .collect()
    }

    /// Deletes the servers of `provision` behind the control plane's back.
    pub(crate) fn remove_servers(&self, provision: &str) {
        self.lock()
            .servers
            .retain(|_, s| s.provision_id != provision);
    }

    /// The servers of `provision` report an error state from now on.
    pub(crate) fn break_servers(&self, provision: &str) {
        for s in self
            .lock()
            .servers
            .values_mut()
            .filter(|s| s.provision_id == provision)
        {
            s.broken = true;
        }
    }

    /// Calls of `method` so far.
    pub(crate) fn calls(&self, method: &str) -> usize {
        self.lock().calls.get(method).copied().unwrap_or(0)
    }

    /// Every call so far.
    pub(crate) fn total_calls(&self) -> usize {
        self.lock().calls.values().sum()
    }

    /// What exists for `provision`: servers and dedicated firewalls.
    pub(crate) fn inventory(&self, provision: &str) -> (usize, usize) {
        let s = self.lock();
        let servers = s
            .servers
            .values()
            .filter(|v| v.provision_id == provision)
            .count();
        (servers, usize::from(s.firewalls.contains(provision)))
    }

    /// Where the server of `provision` was created: (region, size).
    pub(crate) fn placed(&self, provision: &str) -> Option<(String, String)> {
        let s = self.lock();
        s.servers
            .values()
            .find(|v| v.provision_id == provision)
            .map(|v| (v.region.clone(), v.size.clone()))
    }

    /// How many servers were ever created for `provision`.
    pub(crate) fn created(&self, provision: &str) -> usize {
        self.lock().created.get(provision).copied().unwrap_or(0)
    }

    /// The user-data of the last create for `provision`.
    pub(crate) fn user_data(&self, provision: &str) -> Option<String> {
        self.lock().user_data.get(provision).cloned()
    }

    /// Counts the call and returns its fault, if one is armed.
    fn enter(&self, method: &'static str) -> Option<Fault> {
        let mut s = self.lock();
        *s.calls.entry(method).or_default() += 1;
        let now = Instant::now();
        s.faults.retain(|f| f.until.is_none_or(|u| now < u));
        let index = s
            .faults
            .iter()
            .position(|f| f.method == method && f.times > 0)?;
        let mut fault = s.faults.remove(index);
        fault.times -= 1;
        let taken = fault.clone();
        if fault.times > 0 && fault.until.is_some() {
            // A storm alternates its errors: the one taken goes to the back.
            s.faults.push(fault);
        } else if fault.times > 0 {
            s.faults.insert(index, fault);
        }
        Some(taken)
    }

    fn info(id: u64, s: &Server, running_after: u32) -> ServerInfo {
        let (state, word) = match (s.broken, s.polls >= running_after) {
            (true, _) => (ServerState::Failed, "error"),
            (false, true) => (ServerState::Running, "running"),
            (false, false) => (ServerState::Pending, "initializing"),
        };
        ServerInfo {
            id: id.to_string(),
            name: s.name.clone(),
            state,
            provider_state: word.into(),
            ipv4: Some(format!("192.0.2.{}", id % 250)),
            provision_id: Some(s.provision_id.clone()),
        }
    }

    fn create(&self, req: &CreateServer) -> ServerInfo {
        let mut st = self.lock();
        let o = &req.ownership;
        st.user_data
            .insert(o.provision_id.clone(), req.user_data.clone());
        let running_after = st.running_after_polls;
        if let Some((id, s)) = st
            .servers
            .iter()
            .find(|(_, s)| s.provision_id == o.provision_id)
        {
            return Self::info(*id, s, running_after);
        }
        st.next_id += 1;
        let id = st.next_id;
        st.firewalls.insert(o.provision_id.clone());
        *st.created.entry(o.provision_id.clone()).or_default() += 1;
        let server = Server {
            name: req.name.clone(),
            region: req.region.clone(),
            size: req.size.clone(),
            provision_id: o.provision_id.clone(),
            control_plane: o.control_plane.clone(),
            polls: 0,
            broken: false,
        };
        let info = Self::info(id, &server, running_after);
        st.servers.insert(id, server);
        info
    }
}

#[async_trait]
impl CloudProvider for FakeProvider {
    fn id(&self) -> ProviderId {
        ProviderId::Hetzner
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        if let Some(f) = self.enter("list_regions") {
            return Err(f.error);
        }
        Ok(vec![
            Region {
                id: "fsn1".into(),
                name: "Falkenstein DC Park 1".into(),
            },
            Region {
                id: "nbg1".into(),
                name: "Nuremberg DC Park 1".into(),
            },
        ])
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        if let Some(f) = self.enter("list_sizes") {
            return Err(f.error);
        }
        let size = |id: &str, vcpus: u32| Size {
            // Every size of this catalog is x86-64.
            architecture: levelrail_types::CpuArch::X86_64,
            unavailable_reason: None,
            id: id.into(),
            name: id.to_uppercase(),
            vcpus,
            memory_mb: 2048 * vcpus,
            disk_gb: 40,
            pricing: levelrail_clouds::Pricing::Known(levelrail_clouds::Price::monthly(
                "4.51".into(),
                "EUR",
            )),
        };
        match region {
            "fsn1" => Ok(vec![size("cx22", 2)]),
            // cx32 is offered in nbg1 only.
            "nbg1" => Ok(vec![size("cx22", 2), size("cx32", 4)]),
            _ => Err(error(ErrorKind::NotFound, "not_found")),
        }
    }

    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        let delay = {
            let mut st = self.lock();
            st.creating.0 += 1;
            st.creating.1 = st.creating.1.max(st.creating.0);
            st.create_delay
        };
        tokio::time::sleep(delay).await;
        self.lock().creating.0 -= 1;
        if self.lock().full_regions.contains(&req.region) {
            self.enter("create_server");
            return Err(error(
                ErrorKind::CapacityUnavailable,
                "resource_unavailable",
            ));
        }
        match self.enter("create_server") {
            Some(f) if f.after_effect => {
                self.create(req);
                Err(f.error)
            }
            Some(f) => Err(f.error),
            None => Ok(self.create(req)),
        }
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        if let Some(f) = self.enter("get_server") {
            return Err(f.error);
        }
        let mut st = self.lock();
        let running_after = st.running_after_polls;
        let key: u64 = id
            .parse()
            .map_err(|_| error(ErrorKind::NotFound, "not_found"))?;
        let server = st
            .servers
            .get_mut(&key)
            .ok_or_else(|| error(ErrorKind::NotFound, "not_found"))?;
        server.polls = server.polls.saturating_add(1);
        Ok(Self::info(key, server, running_after))
    }

    fn poll_batch(&self) -> usize {
        self.lock().poll_batch
    }

    fn poll_group(&self, _server_id: &str) -> Option<String> {
        (self.lock().poll_batch > 1).then(String::new)
    }

    async fn poll_servers(
        &self,
        control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        if let Some(f) = self.enter("poll_servers") {
            return Err(f.error);
        }
        let mut st = self.lock();
        assert!(targets.len() <= st.poll_batch, "a batch over poll_batch");
        if st.batch_finds_none {
            return Ok(Vec::new());
        }
        let running_after = st.running_after_polls;
        let mut out = Vec::new();
        for (id, s) in st.servers.iter_mut().filter(|(_, s)| {
            s.control_plane == control_plane
                && targets.iter().any(|t| t.provision_id == s.provision_id)
        }) {
            s.polls = s.polls.saturating_add(1);
            out.push(Self::info(*id, s, running_after));
        }
        Ok(out)
    }

    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        if let Some(f) = self.enter("delete_server") {
            return Err(f.error);
        }
        let mut st = self.lock();
        if let Some(key) = server.and_then(|id| id.parse::<u64>().ok()) {
            st.servers.remove(&key);
        }
        if !ownership.provision_id.is_empty() {
            st.servers
                .retain(|_, s| s.provision_id != ownership.provision_id);
            st.firewalls.remove(&ownership.provision_id);
        }
        Ok(())
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        if let Some(f) = self.enter("list_servers") {
            return Err(f.error);
        }
        let st = self.lock();
        Ok(st
            .servers
            .iter()
            .filter(|(_, s)| s.control_plane == control_plane)
            .map(|(id, s)| Self::info(*id, s, st.running_after_polls))
            .collect())
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        self.enter("probe");
        Ok(CapabilityReport {
            can_write: true,
            account: "fake".into(),
            message: "fake".into(),
            permissions: Vec::new(),
        })
    }
}
