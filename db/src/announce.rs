//! Announcements to the processes listening on a channel (PostgreSQL `NOTIFY`), sent after
//! the change they announce has committed, many in one statement.
//!
//! PostgreSQL serialises the commits of all transactions that notify: each holds one
//! database-wide lock on the notification queue from its commit's start until its WAL
//! record is flushed. A change that notified in its own transaction (a trigger) therefore
//! made every write of every replica wait in one line, several times per provision. Here a
//! change's transaction notifies no one; one task per process sends what was announced
//! meanwhile, up to [`PER_STATEMENT`] at a time, in one short transaction of its own.
//!
//! What this gives up: an announcement is sent a moment after its commit, and one whose
//! process dies in that moment is never sent. Listeners treat the feed as a hint (they read
//! the state it names, and poll as a fallback), so a lost announcement delays an update by
//! the fallback's interval and loses nothing.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use sqlx::PgPool;
use tokio::sync::Notify;
use tracing::{debug, warn};

/// Announcements sent in one statement. The sender does not wait to gather more: a
/// watcher on another replica reads the state an announcement names, so a late one shows
/// it a later state and hides a stage; under load, what queues while a statement is sent
/// goes in the next.
const PER_STATEMENT: usize = 512;

/// Announcements waiting at most; past it the oldest are dropped (see the module's note on
/// what a lost announcement costs).
const QUEUED_AT_MOST: usize = 65_536;

/// The sender of one process's announcements.
#[derive(Debug)]
pub(crate) struct Announcer {
    queue: Arc<Queue>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: Mutex<VecDeque<(&'static str, String)>>,
    ready: Notify,
}

impl Announcer {
    /// Starts the sender over `pool` (within a Tokio runtime).
    pub(crate) fn start(pool: PgPool) -> Self {
        let queue = Arc::new(Queue::default());
        let task = tokio::spawn(send_all(pool, Arc::clone(&queue)));
        Announcer { queue, task }
    }

    /// Queues `payload` for `channel`; never waits.
    pub(crate) fn announce(&self, channel: &'static str, payload: String) {
        let mut waiting = self.queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.len() >= QUEUED_AT_MOST {
            waiting.pop_front();
            debug!("announcements queue full; dropped the oldest");
        }
        waiting.push_back((channel, payload));
        drop(waiting);
        self.queue.ready.notify_one();
    }

    /// Stops sending (what is still queued is not sent).
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Announcer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends whatever is queued, one statement per channel and batch, for as long as the
/// process lives.
async fn send_all(pool: PgPool, queue: Arc<Queue>) {
    loop {
        let batch: Vec<(&'static str, String)> = {
            let mut waiting = queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
            let n = waiting.len().min(PER_STATEMENT);
            waiting.drain(..n).collect()
        };
        if batch.is_empty() {
            queue.ready.notified().await;
            continue;
        }
        let mut channels: Vec<&'static str> = Vec::new();
        for (channel, _) in &batch {
            if !channels.contains(channel) {
                channels.push(channel);
            }
        }
        for channel in channels {
            let payloads: Vec<String> = batch
                .iter()
                .filter(|(c, _)| *c == channel)
                .map(|(_, p)| p.clone())
                .collect();
            if let Err(e) = send(&pool, channel, &payloads).await {
                // Listeners fall back to polling: the state is read there, late.
                warn!(error = %e, count = payloads.len(), "could not send change announcements");
            }
        }
    }
}

/// One `NOTIFY` per payload, in order, in one statement (one transaction).
async fn send(pool: &PgPool, channel: &str, payloads: &[String]) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload")
        .bind(channel)
        .bind(payloads)
        .execute(pool)
        .await?;
    Ok(())
}
