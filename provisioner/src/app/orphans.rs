//! The `Orphans` state struct: the operator's orphan inventory behind `ListOrphans`,
//! `AdoptOrphan` and `DeleteOrphan`. Deleting goes through the sweeper's own path; adopting
//! mints a join token bound to the server's name and hands back the agent's env file.
use std::sync::Arc;

use secrecy::{ExposeSecret as _, SecretString};
use time::Duration;
use tracing::{info, warn};

use super::error::NodesError;
use super::nodes::{JoinTokenInfo, Nodes};
use crate::app::workflow::Sweeper;
use crate::cloudinit::ENV_FILE_PATH;
use crate::model::NodeName;
use crate::model::Role;
use crate::model::ports::OrphanStore;
use crate::model::{Orphan, OrphanId, OrphanState};

/// How long an adopted server's join token lives: time to log in and start the agent.
pub const ADOPTION_TOKEN_TTL: Duration = Duration::hours(24);

/// What adopting an orphan hands the operator, once.
pub struct Adoption {
    /// The orphan, now adopted.
    pub orphan: Orphan,
    /// The join token's public facts.
    pub token: JoinTokenInfo,
    /// The join token (secret).
    pub secret: SecretString,
    /// The agent's env file, holding the token (secret).
    pub env_file: SecretString,
    /// Where the env file goes on the server.
    pub env_file_path: &'static str,
    /// The command that starts the agent with it.
    pub command: String,
}

impl std::fmt::Debug for Adoption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adoption")
            .field("orphan", &self.orphan)
            .field("token", &self.token)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// The orphan inventory.
pub struct Orphans {
    store: Arc<dyn OrphanStore>,
    nodes: Arc<Nodes>,
    sweeper: Sweeper,
    control_plane_addr: Option<String>,
}

impl std::fmt::Debug for Orphans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orphans").finish_non_exhaustive()
    }
}

impl Orphans {
    /// The inventory over `store`, minting tokens through `nodes`, deleting through
    /// `sweeper`; adopted agents dial `control_plane_addr` (the agent listener).
    pub fn new(
        store: Arc<dyn OrphanStore>,
        nodes: Arc<Nodes>,
        sweeper: Sweeper,
        control_plane_addr: Option<String>,
    ) -> Self {
        Orphans {
            store,
            nodes,
            sweeper,
            control_plane_addr,
        }
    }

    /// Every orphan, oldest first.
    pub async fn list_orphans(&self) -> Result<Vec<Orphan>, NodesError> {
        Ok(self.store.list_orphans().await?)
    }

    /// Takes a pending orphan over: a join token bound to its name (returned once) and the
    /// env file and command that start the agent on it. The sweeper leaves it alone after.
    pub async fn adopt_orphan(&self, id: &OrphanId) -> Result<Adoption, NodesError> {
        let orphan = self.get(id).await?;
        if orphan.state != OrphanState::Pending {
            return Err(NodesError::FailedPrecondition(format!(
                "orphan {id} is {}, not pending",
                orphan.state.as_str()
            )));
        }
        let addr = self.control_plane_addr.clone().ok_or_else(|| {
            NodesError::FailedPrecondition(
                "this control plane has no agent address to give the adopted server".into(),
            )
        })?;
        let name = NodeName::parse(&orphan.node_name).map_err(|_| {
            NodesError::FailedPrecondition(format!(
                "orphan {id}'s server name is not a valid node name; enroll it by hand with \
                 a join token naming another"
            ))
        })?;
        let (token, secret) = self
            .nodes
            .create_join_token(
                Some(ADOPTION_TOKEN_TTL),
                Some(name.clone()),
                None,
                Role::General,
            )
            .await?;
        let Some(orphan) = self.adopt_or_revoke(id, &token).await? else {
            return Err(NodesError::FailedPrecondition(format!(
                "orphan {id} changed state meanwhile; list it again"
            )));
        };
        info!(orphan = %id, token = %token.id, "orphan adopted");
        let env_file = env_file(&addr, &secret, &name);
        Ok(Adoption {
            orphan,
            token,
            secret,
            env_file,
            env_file_path: ENV_FILE_PATH,
            command: format!("levelrail-agent --env-file {ENV_FILE_PATH}"),
        })
    }

    /// Deletes an orphan's server at its provider now (the sweeper's path) and returns the
    /// orphan afterwards; a deleted one is returned as it is.
    pub async fn delete_orphan(&self, id: &OrphanId) -> Result<Orphan, NodesError> {
        let orphan = self.get(id).await?;
        match orphan.state {
            OrphanState::Deleted => return Ok(orphan),
            // An adopted server is a node (or about to be one): never destroyed from here.
            OrphanState::Adopted => {
                return Err(NodesError::FailedPrecondition(format!(
                    "orphan {id} was adopted; delete its node instead (nodes delete --destroy-server)"
                )));
            }
            OrphanState::Pending => {}
        }
        match self.sweeper.delete(&orphan).await? {
            Some(after) => Ok(after),
            None => Err(NodesError::FailedPrecondition(format!(
                "orphan {id} changed state meanwhile; list it again"
            ))),
        }
    }

    async fn get(&self, id: &OrphanId) -> Result<Orphan, NodesError> {
        self.store
            .get_orphan(id)
            .await?
            .ok_or_else(|| NodesError::NotFound {
                what: "orphan",
                id: id.to_string(),
            })
    }

    /// Adopts the orphan; when it left `pending` meanwhile, revokes the token just minted.
    async fn adopt_or_revoke(
        &self,
        id: &OrphanId,
        token: &JoinTokenInfo,
    ) -> Result<Option<Orphan>, NodesError> {
        let adopted = self.store.adopt_orphan(id, self.nodes.now()).await;
        if !matches!(adopted, Ok(Some(_)))
            && let Err(e) = self.nodes.revoke_join_token(&token.id).await
        {
            warn!(orphan = %id, token = %token.id, error = %e, "could not revoke the unused adoption token");
        }
        Ok(adopted?)
    }
}

/// The agent's env file (`agent/src/config.rs` names), holding the token.
fn env_file(addr: &str, token: &SecretString, name: &NodeName) -> SecretString {
    SecretString::from(format!(
        "APP_CONTROL_PLANE_ADDR={addr}\nAPP_JOIN_TOKEN={}\nAPP_NODE_NAME={}\n",
        token.expose_secret(),
        name.as_str()
    ))
}
