//! The test bench: a provisioner over the memory store, the fake cloud behind a registry,
//! a `Nodes` wired to the workflow's events, a scripted fault hook, and helpers that play
//! the node's part (progress reports, enrollment) with the token from the user-data.
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use secrecy::{ExposeSecret as _, SecretString};
use tokio::time::Instant;

use super::fake::FakeProvider;
use super::granted::GrantedClient;
use crate::app::workflow::hooks::{HookAction, HookPoint, StepHook};
use crate::app::workflow::{ProvisionEvents, ProvisionTeardown};
use crate::app::{
    Nodes, ProgressAuthority, Provisioner, ProvisionerConfig, ProvisionerDeps, WorkflowTuning,
};
use crate::cloudinit::{
    AgentDownload, AgentSource, JOIN_TOKEN_PATH, PROGRESS_HEADER_PATH, written_file,
};
use crate::enroll::ControlPlaneCa;
use crate::model::ports::Clock;
use crate::model::ports::{ProvisionStore, ProvisionerStore};
use crate::model::provision::{
    Provision, ProvisionId, ProvisionInput, ProvisionStatus, SealingKey,
};
use crate::model::{InstallStep, Node, NodeName};
use crate::store::MemoryStore;
use crate::test_support::{self, START};
use levelrail_clouds::catalog::{CatalogCache, CatalogTtl};
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::registry::{
    AccessBroker, BrokerError, Clients, Constructor, Grant, GrantContext, ProviderRegistry,
    ProviderSpec,
};
use levelrail_clouds::{CloudProvider, ProviderId};
use levelrail_types::CpuArch;

/// The control-plane id of every bench.
pub(crate) const CONTROL_PLANE: &str = "cp-test";
/// The node name most tests provision.
pub(crate) const NAME: &str = "web-1";

/// A hook playing a script: at each point, an action a number of times.
#[derive(Debug, Default)]
pub(crate) struct ScriptedHook {
    script: Mutex<HashMap<HookPoint, (HookAction, usize)>>,
    fired: Mutex<Vec<HookPoint>>,
}

impl ScriptedHook {
    /// `action` the first time `point` is reached.
    pub(crate) fn once(point: HookPoint, action: HookAction) -> Arc<Self> {
        Self::many(&[(point, action)])
    }

    /// Each `(point, action)` once.
    pub(crate) fn many(script: &[(HookPoint, HookAction)]) -> Arc<Self> {
        let hook = ScriptedHook::default();
        hook.script
            .lock()
            .expect("lock")
            .extend(script.iter().map(|(p, a)| (*p, (*a, 1))));
        Arc::new(hook)
    }

    /// Whether the scripted action at `point` was taken.
    pub(crate) fn fired(&self, point: HookPoint) -> bool {
        self.fired.lock().expect("lock").contains(&point)
    }
}

impl StepHook for ScriptedHook {
    fn at(&self, _id: &ProvisionId, point: HookPoint) -> HookAction {
        let mut script = self.script.lock().expect("lock");
        match script.get_mut(&point) {
            Some((action, left)) if *left > 0 => {
                *left -= 1;
                self.fired.lock().expect("lock").push(point);
                *action
            }
            _ => HookAction::Continue,
        }
    }
}

/// Grants for Hetzner only (DigitalOcean has no credential stored), each living
/// `grant_life` by the bench's clock when set. The token carries its expiry, which the
/// client built on it enforces (as a token cloud does).
pub(crate) struct TestBroker {
    clock: Clock,
    grant_life: Mutex<Option<Duration>>,
    issued: AtomicUsize,
    /// The last grant, handed out again while it lives once caching is on (as the
    /// credentials service's cache does).
    caching: Mutex<Option<Grant>>,
    cache_on: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TestBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestBroker").finish_non_exhaustive()
    }
}

impl TestBroker {
    /// Grants issued so far.
    pub(crate) fn issued(&self) -> usize {
        self.issued.load(Ordering::SeqCst)
    }

    /// Grants issued from now on live `life`.
    pub(crate) fn set_grant_life(&self, life: Duration) {
        *self.grant_life.lock().expect("lock") = Some(life);
    }

    /// From now on `issue` hands out the last grant again while it lives; `issue_fresh`
    /// never does.
    pub(crate) fn cache_grants(&self) {
        self.cache_on.store(true, Ordering::SeqCst);
    }

    fn mint(&self) -> Grant {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let expires = (*self.grant_life.lock().expect("lock")).map(|life| (self.clock)() + life);
        let token = match expires {
            Some(at) => format!("tok-{n};exp:{}", at.unix_timestamp_nanos()),
            None => format!("tok-{n}"),
        };
        let grant = Grant::bearer(
            "cred_test",
            SecretString::from(token),
            GrantContext::default(),
        )
        .expiring(expires);
        *self.caching.lock().expect("lock") = Some(grant.clone());
        grant
    }
}

#[async_trait]
impl AccessBroker for TestBroker {
    async fn issue(&self, provider: ProviderId, _purpose: &str) -> Result<Grant, BrokerError> {
        if provider != ProviderId::Hetzner {
            return Err(BrokerError::NotConnected(provider));
        }
        let cached = self.caching.lock().expect("lock").clone();
        if let Some(grant) = cached.filter(|g| {
            self.cache_on.load(Ordering::SeqCst)
                && g.expires_at.is_none_or(|at| at > (self.clock)())
        }) {
            return Ok(grant);
        }
        Ok(self.mint())
    }

    async fn issue_fresh(
        &self,
        provider: ProviderId,
        _purpose: &str,
    ) -> Result<Grant, BrokerError> {
        if provider != ProviderId::Hetzner {
            return Err(BrokerError::NotConnected(provider));
        }
        Ok(self.mint())
    }
}

fn registry(fake: &Arc<FakeProvider>, broker: Arc<TestBroker>) -> ProviderRegistry {
    let spec = |fake: Arc<FakeProvider>, clock: Clock| {
        let construct: Constructor = Arc::new(move |parts| {
            let token = parts
                .access
                .bearer(ProviderId::Hetzner)?
                .expose_secret()
                .to_owned();
            let expires = token
                .split_once(";exp:")
                .and_then(|(_, n)| n.parse::<i128>().ok());
            Ok(Arc::new(GrantedClient {
                inner: Arc::clone(&fake),
                token,
                expires,
                clock: Arc::clone(&clock),
            }) as Arc<dyn CloudProvider>)
        });
        ProviderSpec {
            base_url: "fake://cloud".into(),
            construct,
            limiter: RateLimiter::unlimited,
        }
    };
    let clock = Arc::clone(&broker.clock);
    let clients = Clients::default()
        .with(
            ProviderId::Hetzner,
            spec(Arc::clone(fake), Arc::clone(&clock)),
        )
        .with(ProviderId::DigitalOcean, spec(Arc::clone(fake), clock));
    ProviderRegistry::new(broker, Arc::new(clients))
}

/// The configuration of a bench.
pub(crate) fn config(tuning: WorkflowTuning) -> ProvisionerConfig {
    ProvisionerConfig {
        control_plane_id: CONTROL_PLANE.into(),
        default_control_plane_addr: Some("cp.example.com:9443".into()),
        agent_addr_policy: crate::app::AgentAddrPolicy::Routable,
        agent: AgentSource::Binary(AgentDownload {
            base_url: "https://cp.example.com:9443/v1/agent/1.0.0".into(),
            sha256: vec![(CpuArch::X86_64, "ab".repeat(32))],
        }),
        timeout: Duration::from_secs(20 * 60),
        progress_url: "https://cp.example.com:9443/v1/provision-progress".into(),
        // The same key across restarts, as the data directory's key file would be.
        sealing_key: SealingKey::from_bytes([7; 32]),
        tuning,
    }
}

/// A clock that follows Tokio's (paused) clock from [`START`].
pub(crate) fn tokio_clock() -> Clock {
    let base = Instant::now();
    Arc::new(move || START + (Instant::now() - base))
}

/// A provisioner and everything around it.
pub(crate) struct Harness {
    pub(crate) store: Arc<dyn ProvisionerStore>,
    pub(crate) fake: Arc<FakeProvider>,
    pub(crate) broker: Arc<TestBroker>,
    ca: Arc<ControlPlaneCa>,
    clock: Clock,
    pub(crate) events: Arc<ProvisionEvents>,
    pub(crate) nodes: Arc<Nodes>,
    pub(crate) provisioner: Arc<Provisioner>,
}

impl Harness {
    /// A fresh bench without faults.
    pub(crate) fn new() -> Self {
        Self::with_hook(None)
    }

    /// A fresh bench with `hook`.
    pub(crate) fn with_hook(hook: Option<Arc<ScriptedHook>>) -> Self {
        Self::with_tuning(hook, WorkflowTuning::default())
    }

    /// A fresh bench with `hook` and `tuning`.
    pub(crate) fn with_tuning(hook: Option<Arc<ScriptedHook>>, tuning: WorkflowTuning) -> Self {
        Self::on_memory(Arc::new(MemoryStore::new()), hook, tuning)
    }

    /// A fresh bench on `memory` (which a test can make fail).
    pub(crate) fn on_memory(
        memory: Arc<MemoryStore>,
        hook: Option<Arc<ScriptedHook>>,
        tuning: WorkflowTuning,
    ) -> Self {
        let parts = (
            memory as _,
            Arc::new(FakeProvider::default()),
            test_support::ca(),
            tokio_clock(),
        );
        Self::build(parts, hook, tuning)
    }

    /// A fresh bench on `store`, in real time, with `tuning`.
    pub(crate) fn on_store(store: Arc<dyn ProvisionerStore>, tuning: WorkflowTuning) -> Self {
        let clock: Clock = Arc::new(time::OffsetDateTime::now_utc);
        Self::build(
            (
                store,
                Arc::new(FakeProvider::default()),
                test_support::ca(),
                clock,
            ),
            None,
            tuning,
        )
    }

    /// A new process on the same database and cloud (after a crash).
    pub(crate) fn restart(&self, hook: Option<Arc<ScriptedHook>>) -> Self {
        let parts = (
            Arc::clone(&self.store),
            Arc::clone(&self.fake),
            Arc::clone(&self.ca),
            Arc::clone(&self.clock),
        );
        Self::build(parts, hook, WorkflowTuning::default())
    }

    fn build(
        (store, fake, ca, clock): (
            Arc<dyn ProvisionerStore>,
            Arc<FakeProvider>,
            Arc<ControlPlaneCa>,
            Clock,
        ),
        hook: Option<Arc<ScriptedHook>>,
        tuning: WorkflowTuning,
    ) -> Self {
        let events = Arc::new(ProvisionEvents::new());
        let broker = Arc::new(TestBroker {
            clock: Arc::clone(&clock),
            grant_life: Mutex::new(None),
            issued: AtomicUsize::new(0),
            caching: Mutex::new(None),
            cache_on: std::sync::atomic::AtomicBool::new(false),
        });
        let registry = Arc::new(registry(&fake, Arc::clone(&broker)));
        let provisions: Arc<dyn ProvisionStore> = Arc::clone(&store) as _;
        let teardown = ProvisionTeardown::new(
            Arc::clone(&provisions),
            Arc::clone(&registry),
            CONTROL_PLANE.into(),
        );
        let nodes = Nodes::with_clock(Arc::clone(&store) as _, Arc::clone(&ca), Arc::clone(&clock))
            .with_enrollment_listener(events.clone())
            .with_server_teardown(Arc::new(teardown))
            .with_progress_authority(ProgressAuthority::new(
                SealingKey::from_bytes([7; 32]),
                Arc::clone(&provisions),
            ));
        let nodes = Arc::new(nodes);
        let mut provisioner = Provisioner::new(ProvisionerDeps {
            store: provisions,
            orphans: Arc::clone(&store) as _,
            nodes: Arc::clone(&nodes),
            registry,
            catalog: CatalogCache::new(CatalogTtl::default()),
            events: Arc::clone(&events),
            config: config(tuning),
            clock: Arc::clone(&clock),
        });
        if let Some(hook) = hook {
            provisioner = provisioner.with_step_hook(hook);
        }
        Harness {
            store,
            fake,
            broker,
            ca,
            clock,
            events,
            nodes,
            provisioner: Arc::new(provisioner),
        }
    }

    /// Provisions `name` (Hetzner, fsn1, cx22).
    pub(crate) async fn provision(&self, name: &str) -> Provision {
        self.provisioner
            .provision(input(name))
            .await
            .expect("provision accepted")
    }

    /// The first state of `id` that satisfies `done`.
    pub(crate) async fn wait_for(
        &self,
        id: &ProvisionId,
        done: impl Fn(&Provision) -> bool,
    ) -> Provision {
        let mut watch = self.provisioner.watch_provision(id).await.expect("watch");
        while let Some(p) = watch.next().await {
            if done(&p) {
                return p;
            }
        }
        panic!("the watch of {id} ended before the awaited state");
    }

    /// The terminal state of `id`.
    pub(crate) async fn finish(&self, id: &ProvisionId) -> Provision {
        self.wait_for(id, |p| p.status.is_terminal()).await
    }

    /// A file `id`'s user-data writes, as the node reads it.
    fn node_file(&self, id: &ProvisionId, path: &str) -> String {
        let user_data = self
            .fake
            .user_data(id.as_str())
            .expect("a server was created with user-data");
        written_file(&user_data, path).expect("the user-data writes the file")
    }

    /// The join token in `id`'s user-data, as the node reads it.
    pub(crate) fn token(&self, id: &ProvisionId) -> String {
        self.node_file(id, JOIN_TOKEN_PATH).trim().to_owned()
    }

    /// The progress credential in `id`'s user-data, as the node's curl sends it.
    pub(crate) fn progress_credential(&self, id: &ProvisionId) -> String {
        let header = self.node_file(id, PROGRESS_HEADER_PATH);
        header
            .trim()
            .strip_prefix("Authorization: Bearer ")
            .expect("a bearer header")
            .to_owned()
    }

    /// Plays cloud-init: reports every install step.
    pub(crate) async fn report_all(&self, id: &ProvisionId) {
        let credential = self.progress_credential(id);
        for step in InstallStep::ALL {
            self.nodes
                .report_progress(&credential, step, None)
                .await
                .expect("progress accepted");
            // A real node takes a while between steps; let the driver and watchers see each.
            self.settle().await;
        }
    }

    /// Plays the agent: enrolls under `name`.
    pub(crate) async fn enroll(&self, id: &ProvisionId, name: &str) -> Node {
        let name = NodeName::parse(name).expect("name");
        let csr = test_support::csr();
        let (node, _) = self
            .nodes
            .enroll(
                &self.token(id),
                name,
                vec!["192.0.2.10".into()],
                "1.0.0".into(),
                &csr,
            )
            .await
            .expect("enrollment");
        node
    }

    /// Boots `id` to `ready`: waits for `installing`, reports, enrolls.
    pub(crate) async fn complete(&self, id: &ProvisionId, name: &str) -> Provision {
        self.wait_for(id, |p| p.status >= ProvisionStatus::Installing)
            .await;
        self.report_all(id).await;
        self.enroll(id, name).await;
        self.finish(id).await
    }

    /// Lets spawned tasks (followers, drivers) catch up.
    pub(crate) async fn settle(&self) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    /// Join tokens of `id` that could still be redeemed.
    pub(crate) async fn live_tokens(&self, id: &ProvisionId) -> usize {
        let tokens = self.store.list_join_tokens().await.expect("tokens");
        tokens
            .iter()
            .filter(|t| t.provision_id.as_deref() == Some(id.as_str()))
            .filter(|t| t.used_at.is_none() && t.revoked_at.is_none())
            .count()
    }

    /// Asserts that a failed provision left nothing behind.
    pub(crate) async fn assert_clean_slate(&self, p: &Provision) {
        assert_eq!(p.status, ProvisionStatus::Failed, "{p:?}");
        assert_eq!(
            self.fake.inventory(p.id.as_str()),
            (0, 0),
            "servers or firewalls left at the provider"
        );
        assert_eq!(
            self.live_tokens(&p.id).await,
            0,
            "a live join token is left"
        );
        assert_eq!(
            self.store.name_claim(&p.name).await.expect("claim"),
            None,
            "the name is still claimed"
        );
        let row = self
            .store
            .get_provision(&p.id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(row.sealed_join_token, None, "the sealed token was kept");
        assert_eq!(row.lease_owner, None, "the lease was kept");
    }
}

/// A valid request for `name`.
pub(crate) fn input(name: &str) -> ProvisionInput {
    ProvisionInput {
        provider: Some(ProviderId::Hetzner),
        region: "fsn1".into(),
        size: "cx22".into(),
        name: name.into(),
        ..Default::default()
    }
}
