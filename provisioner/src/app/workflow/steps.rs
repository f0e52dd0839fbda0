//! The forward actions of the saga before the server exists: the join token and the
//! user-data (the create is in `create.rs`). Each can run again after a crash with the same
//! end state: a repeated mint revokes the unrecorded token first, and rendering is pure.
use std::sync::Arc;

use secrecy::ExposeSecret as _;
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::driver::Driver;
use super::failure::{Failure, Halt, StepError};
use crate::app::PROVISION_JOIN_TOKEN_TTL;
use crate::cloudinit::{self, CloudInitParams};
use crate::model::provision::SagaStep;
use levelrail_clouds::Ownership;

impl Driver {
    /// Runs one forward step.
    pub(super) async fn run_step(&mut self, step: SagaStep) -> Result<(), StepError> {
        match step {
            SagaStep::MintJoinToken => self.mint_join_token().await,
            SagaStep::RenderUserData => self.render_user_data().await,
            SagaStep::CreateServer => self.create_server().await,
            SagaStep::WaitRunning | SagaStep::Installing | SagaStep::Enrolling => {
                self.wait_for_node().await
            }
            SagaStep::Unwinding | SagaStep::Done => Ok(()),
        }
    }

    /// Mints the provision's token (60 min, bound to its name and id, with its role) and
    /// keeps it sealed in the row.
    async fn mint_join_token(&mut self) -> Result<(), StepError> {
        // A document rendered from an earlier token must not reach the create.
        self.rendered = None;
        let (id, name, role) = (
            self.record.id.clone(),
            self.record.name.clone(),
            self.record.role,
        );
        let phase = self.record.status;
        let nodes = Arc::clone(&self.cx().nodes);
        // The store being down is no reason to fail a provision: the driver stops and the
        // provision is resumed from this step.
        let failed = |e: crate::app::NodesError| -> StepError {
            match e {
                crate::app::NodesError::Unavailable(e) => {
                    Halt::StoreUnavailable(e.to_string()).into()
                }
                e => Failure::new(phase, format!("could not mint the join token: {e}")).into(),
            }
        };
        // A token minted by an attempt whose result was never recorded must not stay live.
        nodes
            .revoke_join_tokens_for_provision(id.as_str())
            .await
            .map_err(failed)?;
        let (info, token) = nodes
            .create_join_token(
                Some(PROVISION_JOIN_TOKEN_TTL),
                Some(name),
                Some(id.to_string()),
                role,
            )
            .await
            .map_err(failed)?;
        let sealed = self
            .cx()
            .config
            .sealing_key
            .seal(&id, &token)
            .map_err(|e| Failure::new(phase, format!("could not seal the join token: {e}")))?;
        let at = self.stamp();
        self.commit(move |r| r.record_join_token(&info.id, sealed.clone(), at.clone()))
            .await?;
        Ok(())
    }

    /// Renders the user-data once to check every input; records its size and digest (the
    /// document itself holds the token and is never stored) with the create's first write,
    /// and keeps the document in memory for that create: rendering is pure, so a crash
    /// before that write (or a resumed driver) renders again.
    async fn render_user_data(&mut self) -> Result<(), StepError> {
        self.take_create_turn().await;
        let user_data = self.user_data()?;
        let digest = hex::encode(Sha256::digest(user_data.as_bytes()));
        let bytes = user_data.len().to_string();
        self.rendered = Some(user_data);
        let at = self.stamp();
        self.defer(move |r| {
            r.saga.complete(
                SagaStep::RenderUserData,
                at.clone(),
                &[("bytes", &bytes), ("sha256", &digest)],
            );
            r.saga_step = SagaStep::CreateServer;
        });
        Ok(())
    }

    /// The user-data of this provision, rendered from the sealed token.
    pub(super) fn user_data(&self) -> Result<Zeroizing<String>, StepError> {
        let r = &self.record;
        let config = &self.cx().config;
        let fail = |reason: String| StepError::from(Failure::new(r.status, reason));
        let sealed = r
            .sealed_join_token
            .as_deref()
            .ok_or_else(|| fail("the sealed join token is missing (internal error)".into()))?;
        let token = config
            .sealing_key
            .open(&r.id, sealed)
            .map_err(|e| fail(format!("could not open the sealed join token: {e}")))?;
        let ca = self.cx().nodes.ca();
        let params = CloudInitParams {
            control_plane_addr: r.control_plane_addr.clone(),
            join_token: token,
            progress_credential: config.sealing_key.progress_credential(&r.id),
            node_name: r.name.to_string(),
            ca_fingerprint: ca.fingerprint().to_owned(),
            ca_pem: ca.cert_pem().to_owned(),
            agent: config.agent.clone(),
            progress_url: config.progress_url.clone(),
        };
        debug_assert!(!params.join_token.expose_secret().is_empty());
        cloudinit::render(&params)
            .map(Zeroizing::new)
            .map_err(|e| fail(format!("could not render the cloud-init: {e}")))
    }

    /// The labels of this provision's resources.
    pub(super) fn ownership(&self) -> Ownership {
        Ownership {
            control_plane: self.cx().config.control_plane_id.clone(),
            provision_id: self.record.id.to_string(),
            node_name: self.record.name.to_string(),
        }
    }
}
