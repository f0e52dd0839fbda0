//! The `Provisioner` state struct: the operations behind `ProvisionerService`. It validates
//! requests, records provisions (claiming their names in the database), hands them to the
//! durable workflow, and serves their state from the store and the watch channels. No
//! provider call happens here except the catalog (cached) and none on any read of a
//! provision.
mod catalog;
mod config;
mod page;
mod reachability;

use std::sync::Arc;

use time::OffsetDateTime;
use tracing::info;

pub use config::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_PROVISION_TIMEOUT, ProvisionerConfig, RetryTuning,
    WorkflowTuning,
};
pub use reachability::AgentAddrPolicy;

use super::{Nodes, Orphans, PROVISION_JOIN_TOKEN_TTL};
use crate::app::workflow::{ProvisionEvents, Subscription, Workflow};
use crate::model::ports::Clock;
use crate::model::ports::{OrphanStore, ProvisionStore};
use crate::model::provision::ProvisionStatus;
use crate::model::provision::{InsertProvisionError, PageCursor, ProvisionRecord};
use crate::model::provision::{Provision, ProvisionError, ProvisionId, ProvisionInput, stamp};
use levelrail_clouds::catalog::CatalogCache;
use levelrail_clouds::registry::ProviderRegistry;

/// What a [`Provisioner`] is built from.
pub struct ProvisionerDeps {
    /// The provision half of the store (the same database as `nodes`' store).
    pub store: Arc<dyn ProvisionStore>,
    /// The orphan half of the same store.
    pub orphans: Arc<dyn OrphanStore>,
    /// The node registry (tokens, enrollment), built with `events` as its listener.
    pub nodes: Arc<Nodes>,
    /// Provider clients through the credentials broker.
    pub registry: Arc<ProviderRegistry>,
    /// The region/size cache.
    pub catalog: CatalogCache,
    /// The status hub (also `nodes`' enrollment listener).
    pub events: Arc<ProvisionEvents>,
    /// Configuration.
    pub config: ProvisionerConfig,
    /// The source of "now".
    pub clock: Clock,
}

/// One page of provisions.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// Newest first.
    pub provisions: Vec<Provision>,
    /// The token of the next page; empty on the last one.
    pub next_page_token: String,
}

impl std::fmt::Debug for ProvisionerDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvisionerDeps")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The provisioner service.
pub struct Provisioner {
    store: Arc<dyn ProvisionStore>,
    orphans: Arc<dyn OrphanStore>,
    nodes: Arc<Nodes>,
    registry: Arc<ProviderRegistry>,
    catalog: Arc<CatalogCache>,
    config: Arc<ProvisionerConfig>,
    clock: Clock,
    workflow: Workflow,
}

impl std::fmt::Debug for Provisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioner")
            .field("workflow", &self.workflow)
            .finish_non_exhaustive()
    }
}

impl Provisioner {
    /// The provisioner and its workflow engine. Call `workflow().resume_all()` (or
    /// `spawn_recovery`) once at startup to continue provisions a previous run left.
    pub fn new(deps: ProvisionerDeps) -> Self {
        let config = Arc::new(deps.config);
        // The drivers' writes queue behind the API's (or use their own connections).
        let background = deps
            .store
            .background()
            .unwrap_or_else(|| Arc::clone(&deps.store));
        let workflow = Workflow::new(
            background,
            Arc::clone(&deps.orphans),
            Arc::clone(&deps.nodes),
            Arc::clone(&deps.registry),
            deps.events,
            Arc::clone(&config),
            Arc::clone(&deps.clock),
        );
        Provisioner {
            store: deps.store,
            orphans: deps.orphans,
            nodes: deps.nodes,
            registry: deps.registry,
            catalog: Arc::new(deps.catalog),
            config,
            clock: deps.clock,
            workflow,
        }
    }

    /// The same provisioner with a fault-injection hook in its workflow (tests).
    #[cfg(test)]
    pub(crate) fn with_step_hook(
        mut self,
        hook: Arc<dyn crate::app::workflow::hooks::StepHook>,
    ) -> Self {
        self.workflow = self.workflow.with_hook(hook);
        self
    }

    /// The workflow engine.
    pub fn workflow(&self) -> &Workflow {
        &self.workflow
    }

    /// The orphan inventory (served by `NodesService`).
    pub fn orphans(&self) -> Arc<Orphans> {
        Arc::new(Orphans::new(
            Arc::clone(&self.orphans),
            Arc::clone(&self.nodes),
            self.workflow.sweeper(),
            self.config.default_control_plane_addr.clone(),
        ))
    }

    /// The configuration.
    pub fn config(&self) -> &ProvisionerConfig {
        &self.config
    }

    fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// Starts a provision and returns it at once (`creating`); the workflow creates the
    /// server in the background. A repeated `request_id` returns the original provision.
    pub async fn provision(&self, input: ProvisionInput) -> Result<Provision, ProvisionError> {
        let spec = input.validate(self.config.default_control_plane_addr.as_deref())?;
        self.config
            .agent_addr_policy
            .check(&spec.control_plane_addr)?;
        if let Some(request) = &spec.request_id
            && let Some(existing) = self.store.get_provision_by_request(request).await?
        {
            return Ok(Provision::from(&existing));
        }
        let limit = self.config.tuning.max_in_flight;
        if self.workflow.in_flight() >= limit {
            return Err(ProvisionError::ResourceExhausted(format!(
                "this control plane is driving {limit} provisions, its limit \
                 (--max-provisions-in-flight); retry once some have finished"
            )));
        }
        let credential = self.credential(spec.provider, "provision").await?;
        let placements = self.plan_placements(&credential, &spec).await?;
        let asked = tokio::time::Instant::now();
        let now = self.now();
        let id = ProvisionId::generate();
        // Written with the provision (at the database's clock where replicas share it), so
        // the driver holds it from before the write, with no write of its own.
        let lease_until = now + self.config.tuning.lease_ttl;
        let mut record = ProvisionRecord::new(
            id.clone(),
            &spec,
            &credential,
            now,
            self.workflow.owner(),
            lease_until,
        );
        record.saga.placements = placements;
        record.saga.asked_regions = std::iter::once(spec.region.clone())
            .chain(spec.fallback_regions.iter().cloned())
            .collect();
        record.saga.asked_sizes = std::iter::once(spec.size.clone())
            .chain(spec.fallback_sizes.iter().cloned())
            .collect();
        // The token is minted here and stored in the provision's own transaction: the
        // driver starts at rendering, with no write of its own before the create.
        let (token, secret) = self.nodes.mint_join_token(
            PROVISION_JOIN_TOKEN_TTL,
            Some(spec.name.clone()),
            Some(id.to_string()),
            spec.role,
        );
        let sealed = self
            .config
            .sealing_key
            .seal(&id, &secret)
            .map_err(|e| anyhow::anyhow!("could not seal the join token: {e}"))?;
        record.record_join_token(&token.id, sealed, stamp(now));
        let stored = match self
            .store
            .insert_provision_with_token(&record, Some(&token))
            .await
        {
            Ok(stored) => stored,
            Err(InsertProvisionError::Replayed(existing)) => {
                return Ok(Provision::from(&*existing));
            }
            Err(InsertProvisionError::NameTaken) => {
                return Err(ProvisionError::AlreadyExists(spec.name.to_string()));
            }
            Err(InsertProvisionError::Store(e)) => return Err(e.into()),
        };
        info!(provision = %stored.id, provider = %stored.provider, name = %stored.name, token_id = %token.id, "provision requested");
        let view = Provision::from(&stored);
        self.workflow.publish(&view);
        self.workflow.start_leased(stored, asked);
        Ok(view)
    }

    /// Starts a new provision with the settings of the failed provision `id` (see
    /// [`retry_input`]); `request_id` makes the retry idempotent, as for a provision.
    pub async fn retry_provision(
        &self,
        id: &ProvisionId,
        request_id: String,
    ) -> Result<Provision, ProvisionError> {
        let record = self
            .store
            .get_provision(id)
            .await?
            .ok_or_else(|| ProvisionError::NotFound(id.to_string()))?;
        if record.status != ProvisionStatus::Failed {
            return Err(ProvisionError::FailedPrecondition(format!(
                "provision {id} is {}; only a failed provision can be retried",
                record.status.as_str()
            )));
        }
        // Its server, kept as asked, still holds the node's name at the cloud.
        if let Some(server) = kept_server(&record) {
            return Err(ProvisionError::FailedPrecondition(format!(
                "the server {server} of provision {id} was kept (keep on failure) and holds \
                 the name {}: delete it at the cloud, or adopt it, before retrying",
                record.name
            )));
        }
        self.provision(retry_input(&record, request_id)).await
    }

    /// The stored provision (never calls the provider).
    pub async fn get_provision(&self, id: &ProvisionId) -> Result<Provision, ProvisionError> {
        self.store
            .get_provision(id)
            .await?
            .map(|r| Provision::from(&r))
            .ok_or_else(|| ProvisionError::NotFound(id.to_string()))
    }

    /// A page of provisions, newest first. `page_size` 0 means 50; at most 200.
    pub async fn list_provisions(
        &self,
        page_size: u32,
        page_token: &str,
    ) -> Result<ListPage, ProvisionError> {
        let after = page::decode(page_token)?;
        let size = page::size(page_size);
        let mut records = self.store.list_provisions(size + 1, after.as_ref()).await?;
        let more = records.len() > size as usize;
        records.truncate(size as usize);
        let next_page_token = match (more, records.last()) {
            (true, Some(last)) => page::encode(&PageCursor {
                created_at: last.created_at,
                id: last.id.clone(),
            }),
            _ => String::new(),
        };
        Ok(ListPage {
            provisions: records.iter().map(Provision::from).collect(),
            next_page_token,
        })
    }

    /// Live states of a provision: the current one first, then each change, ending after
    /// `ready` or `failed`. Watching costs no provider call.
    pub async fn watch_provision(&self, id: &ProvisionId) -> Result<Subscription, ProvisionError> {
        self.workflow.subscribe(id).await
    }

    /// Cancels a provision in flight: the workflow unwinds it (server deleted, token
    /// revoked) and it ends `failed` with "cancelled by operator". Returns the provision
    /// once unwound (or as it stands after `cancel_wait`). A terminal one is
    /// `FailedPrecondition`.
    pub async fn cancel_provision(&self, id: &ProvisionId) -> Result<Provision, ProvisionError> {
        let mut watch = self.workflow.subscribe(id).await?;
        let mut latest = self.request_cancel(id).await?;
        self.workflow.interrupt_for_cancel(id);
        let wait = tokio::time::timeout(self.config.tuning.cancel_wait, async {
            while let Some(p) = watch.next().await {
                latest = p;
            }
        });
        let _ = wait.await;
        Ok(latest)
    }

    /// Sets the cancel flag (a conditional write, retried on conflicts).
    async fn request_cancel(&self, id: &ProvisionId) -> Result<Provision, ProvisionError> {
        for _ in 0..16 {
            let record = self
                .store
                .get_provision(id)
                .await?
                .ok_or_else(|| ProvisionError::NotFound(id.to_string()))?;
            if record.status.is_terminal() {
                return Err(ProvisionError::FailedPrecondition(format!(
                    "provision {id} is already {}; only a provision in flight can be cancelled",
                    record.status.as_str()
                )));
            }
            if record.cancel_requested {
                return Ok(Provision::from(&record));
            }
            let mut next = record.clone();
            next.cancel_requested = true;
            next.updated_at = self.now();
            if let Some(stored) = self.store.update_provision(&next).await? {
                info!(provision = %id, "cancel requested");
                let view = Provision::from(&stored);
                self.workflow.publish(&view);
                return Ok(view);
            }
        }
        Err(ProvisionError::Unavailable(
            "the provision is changing too fast to cancel; retry".into(),
        ))
    }
}

#[cfg(test)]
mod tests;

/// The request that repeats `record`'s: the same cloud, the region and size choices in their
/// order (the first region and size are the ones first asked for), name, role, SSH keys
/// and source CIDR, image, control-plane address and `keep_on_failure`.
fn retry_input(record: &ProvisionRecord, request_id: String) -> ProvisionInput {
    fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for v in values {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
    // What was asked, in order; a row from before that was recorded has its choices, in
    // which a size a region lacked may come late.
    let saga = &record.saga;
    let (regions, sizes) = if saga.asked_regions.is_empty() {
        let placements = &saga.placements;
        (
            distinct(
                std::iter::once(record.region.clone())
                    .chain(placements.iter().map(|p| p.region.clone())),
            ),
            distinct(
                std::iter::once(record.size.clone())
                    .chain(placements.iter().map(|p| p.size.clone())),
            ),
        )
    } else {
        (saga.asked_regions.clone(), saga.asked_sizes.clone())
    };
    ProvisionInput {
        provider: Some(record.provider),
        region: record.region.clone(),
        size: record.size.clone(),
        name: record.name.to_string(),
        role: record.role,
        ssh_public_keys: record.ssh_public_keys.clone(),
        ssh_source_cidr: record.ssh_source_cidr.clone().unwrap_or_default(),
        image: record.image.clone().unwrap_or_default(),
        control_plane_addr: record.control_plane_addr.clone(),
        request_id,
        keep_on_failure: record.keep_on_failure,
        fallback_regions: regions.into_iter().skip(1).collect(),
        fallback_sizes: sizes.into_iter().skip(1).collect(),
    }
}

/// The server of a failed provision that was kept as asked (not cancelled), when one was
/// made: it still exists at the cloud.
fn kept_server(record: &ProvisionRecord) -> Option<&str> {
    let cancelled = record.saga.failure.as_ref().is_some_and(|f| f.cancelled);
    match record.keep_on_failure && !cancelled {
        true => record.provider_server_id.as_deref(),
        false => None,
    }
}

#[cfg(test)]
mod retry_tests {
    use super::*;
    use crate::model::provision::{NewProvision, Placement};

    fn record(name: &str, region: &str, size: &str, keep_on_failure: bool) -> ProvisionRecord {
        let spec = NewProvision {
            provider: levelrail_types::ProviderId::Hetzner,
            region: region.into(),
            size: size.into(),
            name: crate::model::NodeName::parse(name).expect("name"),
            role: crate::model::Role::General,
            ssh_public_keys: vec![],
            ssh_source_cidr: None,
            image: None,
            control_plane_addr: "cp.example.com:9443".into(),
            request_id: None,
            keep_on_failure,
            fallback_regions: vec![],
            fallback_sizes: vec![],
        };
        let now = OffsetDateTime::UNIX_EPOCH;
        ProvisionRecord::new(ProvisionId::generate(), &spec, "cred", now, "me", now)
    }

    #[test]
    fn a_retry_asks_the_regions_and_sizes_in_the_order_first_asked() {
        let mut r = record("retry-order", "r1", "s1", false);
        // r1 lacks s2, so the choices list s3 before s2.
        r.saga.placements = [
            ("r1", "s1"),
            ("r1", "s3"),
            ("r2", "s1"),
            ("r2", "s2"),
            ("r2", "s3"),
        ]
        .iter()
        .map(|(region, size)| Placement::pending(region, size))
        .collect();
        r.saga.asked_regions = vec!["r1".into(), "r2".into()];
        r.saga.asked_sizes = vec!["s1".into(), "s2".into(), "s3".into()];

        let input = retry_input(&r, "req".into());

        assert_eq!((input.region.as_str(), input.size.as_str()), ("r1", "s1"));
        assert_eq!(input.fallback_regions, ["r2"]);
        assert_eq!(input.fallback_sizes, ["s2", "s3"]);
        assert_eq!(input.request_id, "req");
        assert_eq!(input.name, "retry-order");
        // A row from before the asked order was kept: rebuilt from its choices.
        r.saga.asked_regions.clear();
        r.saga.asked_sizes.clear();
        let rebuilt = retry_input(&r, String::new());
        assert_eq!(rebuilt.fallback_regions, ["r2"]);
        assert_eq!(rebuilt.fallback_sizes, ["s3", "s2"]);
    }

    #[test]
    fn a_kept_server_blocks_a_retry_until_it_is_gone() {
        let mut r = record("kept", "fsn1", "cx22", true);
        assert_eq!(kept_server(&r), None, "no server was made");
        r.provider_server_id = Some("42".into());
        assert_eq!(kept_server(&r), Some("42"));
        r.saga.failure = Some(crate::model::provision::FailureNote {
            phase: "booting".into(),
            reason: "cancelled by operator".into(),
            code: None,
            cancelled: true,
        });
        assert_eq!(kept_server(&r), None, "a cancel deletes even a kept server");
    }
}
