//! The `Nodes` state struct: join tokens, enrollment, heartbeats and the node registry.
//! gRPC handlers call its methods; it holds the store, the control-plane CA and the clock.
mod enroll;
mod progress;
mod validate;

use std::fmt;
use std::sync::Arc;

use secrecy::SecretString;
use time::{Duration, OffsetDateTime};
use tracing::info;

use super::error::NodesError;
use super::teardown::ServerTeardown;
use crate::enroll::ControlPlaneCa;
use crate::model::JoinTokenRecord;
use crate::model::ports::{Clock, EnrollmentListener, NodeStore};
use crate::model::{FieldError, NodeName};
use crate::model::{HeartbeatReport, Node, NodeFilter, NodeId, Role};
use crate::model::{JoinTokenId, MintedJoinToken, constant_time_eq};

pub use progress::ProgressAuthority;

/// Nodes in a page of `ListNodes` when the caller asks for none, and at most.
const NODES_PAGE: u32 = 500;
const NODES_PAGE_MAX: u32 = 1_000;

/// The TTL of a join token when none is asked for (CAPI's kubeadm bootstrap uses 15 min).
pub const DEFAULT_JOIN_TOKEN_TTL: Duration = Duration::minutes(15);
/// The TTL a provision gives its token: enough for a slow boot and Docker install.
pub const PROVISION_JOIN_TOKEN_TTL: Duration = Duration::minutes(60);
/// The longest TTL accepted.
pub const MAX_JOIN_TOKEN_TTL: Duration = Duration::hours(24);

/// The public facts of a join token (everything but its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinTokenInfo {
    /// Its id (`njt_…`).
    pub id: JoinTokenId,
    /// The only node name it may enroll, when bound.
    pub node_name: Option<NodeName>,
    /// The provision it is bound to, when any.
    pub provision_id: Option<String>,
    /// The role of the node it enrolls.
    pub role: Role,
    /// When it was minted.
    pub created_at: OffsetDateTime,
    /// When it stops being redeemable.
    pub expires_at: OffsetDateTime,
    /// The CA pin it carries.
    pub ca_fingerprint: String,
}

/// An enrolled node as authenticated by its client certificate: the certificate's common
/// name and the SHA-256 of its DER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeIdentity {
    /// The node id (the certificate's CN).
    pub node_id: NodeId,
    /// Lowercase hex SHA-256 of the presented certificate's DER.
    pub cert_fingerprint: String,
}

/// The node registry service.
pub struct Nodes {
    store: Arc<dyn NodeStore>,
    ca: Arc<ControlPlaneCa>,
    clock: Clock,
    teardown: Option<Arc<dyn ServerTeardown>>,
    listener: Option<Arc<dyn EnrollmentListener>>,
    progress: Option<Arc<ProgressAuthority>>,
}

impl fmt::Debug for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nodes")
            .field("store", &self.store)
            .field("ca", &self.ca)
            .finish_non_exhaustive()
    }
}

impl Nodes {
    /// A registry on `store`, issuing identities from `ca`, with the system clock.
    pub fn new(store: Arc<dyn NodeStore>, ca: Arc<ControlPlaneCa>) -> Self {
        Self::with_clock(store, ca, Arc::new(OffsetDateTime::now_utc))
    }

    /// A registry with an explicit clock (tests, simulations).
    pub fn with_clock(store: Arc<dyn NodeStore>, ca: Arc<ControlPlaneCa>, clock: Clock) -> Self {
        Nodes {
            store,
            ca,
            clock,
            teardown: None,
            listener: None,
            progress: None,
        }
    }

    /// Tells `listener` about every enrollment and install-progress report as soon as it is
    /// committed (the provision workflow, so `ready` is pushed, not polled).
    pub fn with_enrollment_listener(mut self, listener: Arc<dyn EnrollmentListener>) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Lets `DeleteNode` destroy a provisioned node's server through `teardown` (the
    /// provision workflow). Without it, such requests fail and keep the record.
    pub fn with_server_teardown(mut self, teardown: Arc<dyn ServerTeardown>) -> Self {
        self.teardown = Some(teardown);
        self
    }

    /// The control-plane CA.
    pub fn ca(&self) -> &ControlPlaneCa {
        &self.ca
    }

    /// The current time by this registry's clock.
    pub fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// Mints a single-use join token and stores its hash. `ttl` defaults to 15 minutes and
    /// may be at most 24 hours. Returns the token's facts and the full token string, which
    /// exists only in this return value.
    pub async fn create_join_token(
        &self,
        ttl: Option<Duration>,
        node_name: Option<NodeName>,
        provision_id: Option<String>,
        role: Role,
    ) -> Result<(JoinTokenInfo, SecretString), NodesError> {
        let ttl = ttl.unwrap_or(DEFAULT_JOIN_TOKEN_TTL);
        if ttl <= Duration::ZERO || ttl > MAX_JOIN_TOKEN_TTL {
            return Err(
                FieldError::new("ttl_seconds", "must be between 1 second and 24 hours").into(),
            );
        }
        if let Some(p) = &provision_id {
            validate::provision_id(p)?;
        }
        let (record, token) = self.mint_join_token(ttl, node_name, provision_id, role);
        self.store.create_join_token(&record).await?;
        info!(token_id = %record.id, role = role.as_str(), expires_at = %record.expires_at, "join token created");
        Ok((self.token_info(record), token))
    }

    /// Mints a join token without storing it: its record (the hash only) for the caller to
    /// store in its own write (a provision and its token in one transaction), and the token.
    pub fn mint_join_token(
        &self,
        ttl: Duration,
        node_name: Option<NodeName>,
        provision_id: Option<String>,
        role: Role,
    ) -> (JoinTokenRecord, SecretString) {
        let now = self.now();
        let minted = MintedJoinToken::mint(self.ca.fingerprint());
        let record = JoinTokenRecord {
            id: minted.id,
            secret_sha256: minted.secret_sha256,
            node_name,
            provision_id,
            role,
            created_at: now,
            expires_at: now + ttl,
            used_at: None,
            used_by_node: None,
            revoked_at: None,
        };
        (record, minted.token)
    }

    /// The public facts of a token's record.
    pub fn token_info(&self, record: JoinTokenRecord) -> JoinTokenInfo {
        JoinTokenInfo {
            id: record.id,
            node_name: record.node_name,
            provision_id: record.provision_id,
            role: record.role,
            created_at: record.created_at,
            expires_at: record.expires_at,
            ca_fingerprint: self.ca.fingerprint().to_owned(),
        }
    }

    /// Revokes an unused token. Unknown and used tokens are `NotFound`; revoking twice is
    /// not an error.
    pub async fn revoke_join_token(&self, id: &JoinTokenId) -> Result<(), NodesError> {
        if !self.store.revoke_join_token(id, self.now()).await? {
            return Err(NodesError::NotFound {
                what: "unused join token",
                id: id.to_string(),
            });
        }
        info!(token_id = %id, "join token revoked");
        Ok(())
    }

    /// Revokes every live token of a provision (when it fails or is deleted); returns how
    /// many were revoked.
    pub async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
    ) -> Result<u64, NodesError> {
        let n = self
            .store
            .revoke_join_tokens_for_provision(provision_id, self.now())
            .await?;
        info!(%provision_id, revoked = n, "join tokens of provision revoked");
        Ok(n)
    }

    /// Records a heartbeat from an authenticated node: moves last-seen and replaces its
    /// addresses, agent and Docker versions. Returns the server time. A deleted node, or a
    /// certificate other than the one issued to the node, is `PermissionDenied`.
    pub async fn heartbeat(
        &self,
        identity: &NodeIdentity,
        report: HeartbeatReport,
    ) -> Result<OffsetDateTime, NodesError> {
        validate::report(&report.addresses, &report.agent_version)?;
        if let Some(version) = &report.docker_version {
            validate::docker_version(version)?;
        }
        let denied = || {
            NodesError::PermissionDenied(format!(
                "node {} has no valid identity (deleted?)",
                identity.node_id
            ))
        };
        let node = self
            .store
            .get_node(&identity.node_id)
            .await?
            .ok_or_else(denied)?;
        if !constant_time_eq(&node.cert_fingerprint, &identity.cert_fingerprint) {
            return Err(denied());
        }
        let now = self.now();
        if !self.store.touch_node(&node.id, now, &report).await? {
            return Err(denied());
        }
        Ok(now)
    }

    /// Every node, by name.
    pub async fn list_nodes(&self) -> Result<Vec<Node>, NodesError> {
        Ok(self.store.list_nodes().await?)
    }

    /// A page of the nodes that pass `filter`, by name: up to `page_size` (0: 500; at
    /// most 1,000) after the page token (the last name of the previous page; empty: from
    /// the start), and the next page's token (empty on the last page).
    pub async fn list_nodes_page(
        &self,
        page_size: u32,
        page_token: &str,
        filter: &NodeFilter,
    ) -> Result<(Vec<Node>, String), NodesError> {
        let size = match page_size {
            0 => NODES_PAGE,
            n if n <= NODES_PAGE_MAX => n,
            _ => {
                return Err(NodesError::InvalidArgument {
                    field: "page_size",
                    message: format!("must be at most {NODES_PAGE_MAX} (0 means {NODES_PAGE})"),
                });
            }
        };
        let after = match page_token {
            "" => None,
            token => Some(NodeName::parse_as(token, "page_token")?),
        };
        // One more than the page: whether another page follows.
        let mut nodes = self
            .store
            .list_nodes_page(size + 1, after.as_ref(), filter)
            .await?;
        let more = nodes.len() > size as usize;
        nodes.truncate(size as usize);
        let next = match (more, nodes.last()) {
            (true, Some(last)) => last.name.to_string(),
            _ => String::new(),
        };
        Ok((nodes, next))
    }

    /// One node; `NotFound` for an unknown id.
    pub async fn get_node(&self, id: &NodeId) -> Result<Node, NodesError> {
        self.store
            .get_node(id)
            .await?
            .ok_or_else(|| NodesError::NotFound {
                what: "node",
                id: id.to_string(),
            })
    }

    /// Deletes a node record, which invalidates its identity (its heartbeats are refused
    /// from now on). With `destroy_server`, a node that came from a provision first has
    /// its server destroyed through the [`ServerTeardown`]; if that is unavailable or
    /// fails, the record is kept so the request can be retried. A node that came from no
    /// provision has no server of ours to destroy: only its record goes.
    pub async fn delete_node(&self, id: &NodeId, destroy_server: bool) -> Result<(), NodesError> {
        if destroy_server {
            let node = self.get_node(id).await?;
            if let Some(provision_id) = &node.provision_id {
                let teardown = self.teardown.as_ref().ok_or_else(|| {
                    NodesError::FailedPrecondition(format!(
                        "node {id} came from provision {provision_id}, but this control plane \
                         cannot destroy servers; the node was not deleted"
                    ))
                })?;
                teardown.destroy_server(provision_id).await?;
                info!(node_id = %id, %provision_id, "server of node destroyed");
            }
        }
        if !self.store.delete_node(id).await? {
            return Err(NodesError::NotFound {
                what: "node",
                id: id.to_string(),
            });
        }
        info!(node_id = %id, "node deleted");
        Ok(())
    }
}

#[cfg(test)]
mod tests;
