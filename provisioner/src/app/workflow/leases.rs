//! Lease renewal for every driver of this process in one write: every third of the lease,
//! the leases the local drivers hold are renewed together
//! ([`crate::model::ports::ProvisionStore::renew_leases`]). A driver whose lease is missing
//! from the answer (another replica took it over, or it lapsed) is told to stop, and so is
//! one whose lease was not confirmed by the time a third of it is left: every renewal races
//! that deadline, so a hung database cannot keep a driver going past its lease. The driver
//! then stops before its next provider call, before another replica may start driving.
use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use tokio::time::Instant;
use tracing::warn;

use super::Shared;
use crate::model::provision::ProvisionId;

/// The pause before asking again after a failed renewal.
const RENEWAL_RETRY: Duration = Duration::from_secs(1);
/// The shortest pause between two rounds.
const MIN_PAUSE: Duration = Duration::from_millis(50);

/// Renews this process's leases until the workflow is gone.
pub(super) async fn renew_all(shared: Weak<Shared>) {
    let mut pause = match shared.upgrade() {
        Some(s) => s.cx.config.tuning.lease_ttl / 3,
        None => return,
    };
    loop {
        tokio::time::sleep(pause).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        pause = renew_once(&shared).await.max(MIN_PAUSE);
    }
}

/// One round: renews every lease held here, stops the drivers that lost theirs or whose
/// lease may lapse; returns the pause before the next round.
async fn renew_once(shared: &Shared) -> Duration {
    let ttl = shared.cx.config.tuning.lease_ttl;
    // How long a confirmation keeps a driver going.
    let keep = ttl - ttl / 3;
    let held = shared.events.leases();
    let mut pause = ttl / 3;
    if let Some(earliest) = held.iter().map(|(_, t)| t.confirmed).min() {
        let asked = Instant::now();
        let ids: Vec<ProvisionId> = held
            .iter()
            .filter_map(|(id, _)| ProvisionId::parse(id).ok())
            .collect();
        let renewal = async {
            let now = shared.lease_now().await?;
            shared
                .store
                .renew_leases(&shared.owner, &ids, now, shared.lease_until(now))
                .await
        };
        pause = match tokio::time::timeout_at(earliest + keep, renewal).await {
            Ok(Ok(renewed)) => {
                let renewed: HashMap<String, u64> = renewed
                    .into_iter()
                    .map(|(id, epoch)| (id.to_string(), epoch))
                    .collect();
                for (id, tenure) in &held {
                    if renewed.get(id) == Some(&tenure.epoch) {
                        shared.events.confirm_lease(id, tenure.epoch, asked);
                    } else if shared.events.lose_lease(id, tenure.epoch) {
                        warn!(provision = %id, "the lease went to another driver or lapsed; the driver stops");
                    }
                }
                ttl / 3
            }
            Ok(Err(e)) => {
                warn!(leases = held.len(), error = %e, "could not renew the provision leases; retrying");
                RENEWAL_RETRY
            }
            Err(_) => {
                warn!(
                    leases = held.len(),
                    "renewing the provision leases outlasted the earliest lease"
                );
                Duration::ZERO
            }
        };
    }
    // A lease not confirmed in time may lapse: its driver stops. The next round comes no
    // later than the next such deadline.
    let now = Instant::now();
    for (id, tenure) in shared.events.leases() {
        let due = tenure.confirmed + keep;
        if now >= due {
            if shared.events.lose_lease(&id, tenure.epoch) {
                warn!(provision = %id, "the lease could not be renewed before it may lapse; the driver stops");
            }
        } else {
            pause = pause.min(due - now);
        }
    }
    pause
}
