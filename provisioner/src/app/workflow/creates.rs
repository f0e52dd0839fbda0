//! Creates at one cloud run a few at a time on each replica
//! ([`crate::app::WorkflowTuning::creates_per_cloud`]): a burst of provisions is accepted at
//! once (each answered and recorded as `creating`), and their renders and create calls
//! follow in turn. A cloud limits its create rate anyway; taking turns keeps a burst from
//! crowding out the API on the replica's own cores, and from meeting the cloud's rate
//! limit all at once.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use levelrail_types::ProviderId;

/// The create turns of every cloud this process creates servers at.
#[derive(Debug, Default)]
pub(crate) struct CreateTurns {
    clouds: Mutex<HashMap<ProviderId, Arc<Semaphore>>>,
}

impl CreateTurns {
    /// Waits for a turn to create at `provider`, where `per_cloud` may create at once.
    pub(crate) async fn take(
        &self,
        provider: ProviderId,
        per_cloud: usize,
    ) -> OwnedSemaphorePermit {
        let turns = {
            let mut clouds = self.clouds.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(
                clouds
                    .entry(provider)
                    .or_insert_with(|| Arc::new(Semaphore::new(per_cloud.max(1)))),
            )
        };
        turns
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}
