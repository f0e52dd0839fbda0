//! The change feed of a database several replicas share: one task per replica reads the
//! provisions any replica changed (pushed by the database the moment the change commits)
//! and brings this replica up to date at once. Its driver of that provision, if it drives
//! it, wakes to see an enrollment or a progress report, or is handed a cancel made through
//! another replica, with no read: the announcement says which, and the driver publishes
//! its own commits. A provision it only watches is read and published to its watchers.
//! Provisions this replica neither drives nor watches cost nothing. The batched poll of
//! `follow_all` stays as the fallback for a feed that is down.
use std::sync::Weak;
use std::time::Duration;

use tracing::{debug, info, warn};

use super::{Shared, Stop};
use crate::model::ports::ChangeFeed;
use crate::model::provision::{Provision, ProvisionId};

/// The pause before asking a feed that failed again.
const FEED_RETRY: Duration = Duration::from_secs(1);

/// Follows `feed` for as long as the workflow exists.
pub(super) async fn follow_feed(shared: Weak<Shared>, mut feed: Box<dyn ChangeFeed>) {
    info!("following the database's change feed");
    loop {
        let next = feed.next().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match next {
            Ok(Some(change)) => {
                let id = change.provision_id;
                if shared.events.is_driving(&id) {
                    if change.cancel_requested {
                        debug!(provision = %id, "cancel requested; interrupting the driver");
                        shared.events.stop(&id, Stop::Cancel);
                    }
                    shared.events.kick(&id);
                } else {
                    // One missed refresh is repaired by the fallback poll within seconds.
                    let _ = refresh(&shared, vec![id]).await;
                }
            }
            Ok(None) => {
                info!("the change feed reconnected; reading every followed provision again");
                loop {
                    let mut ids = shared.events.followed();
                    ids.extend(shared.events.driving());
                    if refresh(&shared, ids).await {
                        break;
                    }
                    tokio::time::sleep(FEED_RETRY).await;
                }
            }
            Err(e) => {
                warn!(error = %e, "the change feed is unavailable; reconnecting");
                drop(shared);
                tokio::time::sleep(FEED_RETRY).await;
            }
        }
    }
}

/// Reads the provisions of `ids` this replica drives or watches, publishes them to its
/// watchers, wakes their local drivers and hands a cancel to the driver it concerns (all of
/// them after a reconnect; a watched one on its announcement). `false` when the read
/// failed.
async fn refresh(shared: &Shared, ids: Vec<String>) -> bool {
    let ids: Vec<ProvisionId> = ids
        .iter()
        .filter(|id| shared.events.is_driving(id) || shared.events.is_watched(id))
        .filter_map(|id| ProvisionId::parse(id).ok())
        .collect();
    if ids.is_empty() {
        return true;
    }
    let records = match shared.store.get_provisions(&ids).await {
        Ok(records) => records,
        Err(e) => {
            warn!(error = %e, "could not read the provisions the change feed named");
            return false;
        }
    };
    for record in &records {
        let id = record.id.as_str();
        shared.events.publish(&Provision::from(record));
        if record.cancel_requested && shared.events.is_driving(id) {
            debug!(provision = %id, "cancel requested; interrupting the driver");
            shared.events.stop(id, Stop::Cancel);
        }
        shared.events.kick(id);
    }
    true
}
