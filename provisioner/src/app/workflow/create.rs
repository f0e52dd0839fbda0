//! The `create_server` step: the create at the provider in the current region/size choice,
//! moving on to the next choice when the provider has no capacity there (what the failed
//! attempt made is deleted first), recording which choice was used and why each earlier one
//! was rejected. The attempt is recorded before each call, so an undo looks for a server
//! even if an answer is lost; the server id is recorded in the same write as the status.
use std::sync::Arc;

use tracing::info;

use super::driver::Driver;
use super::events::Stop;
use super::failure::{Failure, StepError, describe};
use super::hooks::HookPoint;
use super::undo::delete_provision_resources;
use crate::model::provision::{PlacementOutcome, ProvisionStatus, SagaStep, current};
use levelrail_clouds::{CreateServer, ErrorKind, ProviderError, ServerInfo};

impl Driver {
    /// Waits for this cloud's turn to render and create (see `creates.rs`), unless this
    /// driver holds one.
    pub(super) async fn take_create_turn(&mut self) {
        if self.create_turn.is_none() {
            let per_cloud = self.cx().config.tuning.creates_per_cloud;
            let turn = self
                .cx()
                .creates
                .take(self.record.provider, per_cloud)
                .await;
            self.create_turn = Some(turn);
        }
    }

    /// Creates the server, trying the choices in order.
    pub(super) async fn create_server(&mut self) -> Result<(), StepError> {
        self.take_create_turn().await;
        let user_data = match self.rendered.take() {
            Some(rendered) => rendered,
            None => self.user_data()?,
        };
        let mut first = true;
        loop {
            if !first {
                // A cancel or the deadline while an earlier choice was tried: no new server.
                self.interrupted()?;
            }
            first = false;
            let Some((region, size)) = self.choice() else {
                // Every choice was rejected before a restart: nothing left to try.
                return Err(self.all_rejected_failure().into());
            };
            self.commit(|r| r.saga.create_attempts += 1).await?;
            let request = Arc::new(CreateServer {
                name: self.record.name.to_string(),
                region: region.clone(),
                size: size.clone(),
                image: self.record.image.clone(),
                user_data: user_data.to_string(),
                ssh_public_keys: self.record.ssh_public_keys.clone(),
                ssh_source_cidr: self.record.ssh_source_cidr.clone(),
                ownership: self.ownership(),
            });
            // Idempotent at the provider by provision id, so a retry adopts what an earlier
            // attempt made.
            let created = self
                .call("create_server", |client| {
                    let request = Arc::clone(&request);
                    async move { client.create_server(&request).await }
                })
                .await;
            drop(request);
            match created {
                Ok(server) => return self.record_server(server).await,
                Err(e) if e.kind == ErrorKind::CapacityUnavailable => {
                    let more = self.reject_choice(&e, &region, &size).await?;
                    if !more {
                        return Err(self.no_capacity_failure(&e, &region).into());
                    }
                }
                Err(e) => {
                    let phase = self.record.status;
                    return Err(Failure::provider(
                        phase,
                        "could not create the server",
                        &e,
                        &region,
                    )
                    .into());
                }
            }
        }
    }

    /// The region and size to create in now: the first choice not rejected (the row's own
    /// region and size for a provision without choices); `None` when every choice was
    /// rejected.
    fn choice(&self) -> Option<(String, String)> {
        if self.record.saga.placements.is_empty() {
            return Some((self.record.region.clone(), self.record.size.clone()));
        }
        current(&self.record.saga.placements).map(|p| (p.region.clone(), p.size.clone()))
    }

    /// A cancelled or timed-out provision stops before another create.
    fn interrupted(&self) -> Result<(), StepError> {
        if *self.stop.borrow() == Stop::Cancel || self.record.cancel_requested {
            return Err(Failure::cancelled(self.record.status).into());
        }
        if self.remaining().is_zero() {
            let timeout = self.cx().config.timeout;
            return Err(
                Failure::timeout(self.record.status, timeout, self.last_poll_code.clone()).into(),
            );
        }
        Ok(())
    }

    /// The failure of a provision whose every choice was rejected (found on resume).
    fn all_rejected_failure(&self) -> Failure {
        let mut f = Failure::new(
            self.record.status,
            format!(
                "could not create the server: every choice was out of capacity: {}",
                self.choices_tried()
            ),
        );
        f.code = self
            .record
            .saga
            .placements
            .last()
            .and_then(|p| p.code.clone());
        f
    }

    /// Records that the current choice has no capacity; when another choice is left, first
    /// deletes what the attempt made (a firewall, a key, a network interface in that
    /// region). Returns whether another choice is left.
    async fn reject_choice(
        &mut self,
        e: &ProviderError,
        region: &str,
        size: &str,
    ) -> Result<bool, StepError> {
        let left = self
            .record
            .saga
            .placements
            .iter()
            .filter(|p| p.outcome != PlacementOutcome::Rejected)
            .count();
        let more = left > 1;
        if more {
            let ownership = Arc::new(self.ownership());
            self.call("delete_provision_resources", |client| {
                let ownership = Arc::clone(&ownership);
                async move { delete_provision_resources(client.as_ref(), None, &ownership).await }
            })
            .await
            .map_err(|e| {
                Failure::provider(
                    self.record.status,
                    "could not clean up before trying the next choice",
                    &e,
                    region,
                )
            })?;
        }
        let reason = describe(e, region);
        let code = Some(e.code.clone()).filter(|c| !c.is_empty());
        let (region, size) = (region.to_owned(), size.to_owned());
        self.commit(move |r| {
            if let Some(p) = r
                .saga
                .placements
                .iter_mut()
                .find(|p| p.region == region && p.size == size)
            {
                p.outcome = PlacementOutcome::Rejected;
                p.reason = Some(reason.clone());
                p.code.clone_from(&code);
            }
        })
        .await?;
        if let (true, Some((next_region, next_size))) = (more, self.choice()) {
            info!(provision = %self.record.id, region = %next_region, size = %next_size, "no capacity; trying the next choice");
        }
        Ok(more)
    }

    /// The failure once no choice has capacity: the last error, and every choice tried.
    fn no_capacity_failure(&self, e: &ProviderError, region: &str) -> Failure {
        let mut f = Failure::provider(self.record.status, "could not create the server", e, region);
        if self.record.saga.placements.len() > 1 {
            f.reason = levelrail_clouds::error::clip(&format!(
                "{}; every choice was out of capacity: {}",
                f.reason,
                self.choices_tried()
            ));
        }
        f
    }

    /// Every choice as `region/size`, in order (`fsn1/cx22, nbg1/cx22`).
    fn choices_tried(&self) -> String {
        let tried: Vec<String> = self
            .record
            .saga
            .placements
            .iter()
            .map(|p| format!("{}/{}", p.region, p.size))
            .collect();
        tried.join(", ")
    }

    /// Records the created server (and the choice in use).
    async fn record_server(&mut self, server: ServerInfo) -> Result<(), StepError> {
        self.hook(HookPoint::AfterCall(SagaStep::CreateServer))?;
        let (region, size) = self
            .choice()
            .unwrap_or_else(|| (self.record.region.clone(), self.record.size.clone()));
        let at = self.stamp();
        self.commit(move |r| {
            r.provider_server_id = Some(server.id.clone());
            if server.ipv4.is_some() {
                r.ip_address.clone_from(&server.ipv4);
            }
            r.status = r.status.max(ProvisionStatus::Booting);
            if let Some(p) = r
                .saga
                .placements
                .iter_mut()
                .find(|p| p.region == region && p.size == size)
            {
                p.outcome = PlacementOutcome::InUse;
            }
            let observed = [
                ("server_id", server.id.as_str()),
                ("provider_state", server.provider_state.as_str()),
                ("region", region.as_str()),
                ("size", size.as_str()),
            ];
            r.saga
                .complete(SagaStep::CreateServer, at.clone(), &observed);
            r.saga_step = SagaStep::WaitRunning;
        })
        .await?;
        // Created and recorded: the next provision's turn.
        self.create_turn = None;
        Ok(())
    }
}
