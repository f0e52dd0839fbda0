//! Group commit over PostgreSQL: requests that arrive while others are being written go to
//! the database together, as one statement and one commit over a JSON array of their
//! records, instead of one statement, one commit and one WAL flush each. (New provisions
//! with their name claims and join tokens: see `provisions::sql`.)
//!
//! Nothing waits to gather a batch: a writer takes what is queued when it is free, so a
//! lone request goes alone at once, and under load each statement carries the requests
//! that queued during the previous one. A batch stays small (at most [`BATCH_BYTES`] of
//! JSON) and the work spreads over [`WRITERS`] connections: on two cores, 48 KB batches
//! over 3 writers measured the same latency as these (CPU, not statements, is the limit),
//! and a small batch holds fewer callers behind one slow statement. (sqlx before 0.9.1
//! left Nagle's algorithm on: a statement larger than one TLS record went out in several
//! writes and waited 40 ms for the server's delayed ACK; 0.9.1 sets `TCP_NODELAY`, and
//! the bench's 48 KB batches dropped from a 57 ms p99 to 14–30 ms.) A batch the database
//! refuses as a whole (a repeated request id, say) is not retried as a batch: each of its
//! requests is told to write alone, which names its own error.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use levelrail_db::{Db, Dialect, Value as Arg};

use crate::model::ports::StoreError;
use time::OffsetDateTime;
use tokio::sync::oneshot;

/// JSON of the requests written in one statement at most (a larger request goes alone).
const BATCH_BYTES: usize = 12 * 1024;
/// Statements in flight at once (each on its own connection of the API's pool of 8).
const WRITERS: usize = 6;

/// What became of one request of a batch.
#[derive(Debug)]
pub(crate) enum Batched {
    /// Inserted; the lease as the database's clock set it.
    Inserted(Option<OffsetDateTime>),
    /// Its name was claimed already (by another provision, or by its own earlier try).
    NotClaimed,
    /// The database refused the batch as a whole: write this request alone.
    Alone,
    /// The database could not be reached, or answered what could not be read: the batch
    /// may have committed, so the request is not written again.
    Failed(StoreError),
}

struct Pending {
    /// The provision's id.
    id: String,
    /// Its record of the batch: `{"a1": …, "a44": …}`.
    row: String,
    reply: oneshot::Sender<Batched>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    writers: usize,
    /// The statement: `$1` is the JSON array of the records; it answers one row per
    /// record with `id`, `inserted` (1 or 0) and `lease_until`.
    statement: Option<&'static str>,
    /// Batch statements that committed, and the requests they carried.
    committed: (usize, usize),
}

/// The queue of one store's requests, with its writers.
#[derive(Default)]
pub(crate) struct InsertBatcher {
    state: Mutex<State>,
}

impl std::fmt::Debug for InsertBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InsertBatcher").finish_non_exhaustive()
    }
}

impl InsertBatcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Batch statements committed so far, and the requests they carried.
    #[cfg(test)]
    pub(crate) fn committed(&self) -> (usize, usize) {
        self.lock().committed
    }

    /// Queues the record `row` of `id` for `statement` (the same for every request of
    /// this batcher) and waits for its batch to commit. A writer is started when fewer
    /// than [`WRITERS`] run; a writer stops once the queue is empty, so none outlives its
    /// work (or its runtime).
    pub(crate) async fn insert<D: Dialect>(
        self: &Arc<Self>,
        db: &Db<D>,
        statement: &'static str,
        id: String,
        row: String,
    ) -> Batched {
        let (reply, answer) = oneshot::channel();
        let pending = Pending { id, row, reply };
        let start = {
            let mut state = self.lock();
            state.statement = Some(statement);
            state.queue.push_back(pending);
            let start = state.writers < WRITERS;
            if start {
                state.writers += 1;
            }
            start
        };
        if start {
            tokio::spawn(Arc::clone(self).write(db.clone()));
        }
        answer.await.unwrap_or(Batched::Alone)
    }

    async fn write<D: Dialect>(self: Arc<Self>, db: Db<D>) {
        let _slot = Writing(Arc::clone(&self));
        loop {
            let (statement, batch): (_, Vec<Pending>) = {
                let mut state = self.lock();
                if state.queue.is_empty() {
                    state.writers -= 1;
                    return;
                }
                let (mut n, mut bytes) = (0, 0);
                for p in &state.queue {
                    bytes += p.row.len() + 1;
                    if n > 0 && bytes > BATCH_BYTES {
                        break;
                    }
                    n += 1;
                }
                (state.statement, state.queue.drain(..n).collect())
            };
            // A caller that went away is not written for: it holds no lease to drive.
            let batch: Vec<Pending> = batch.into_iter().filter(|p| !p.reply.is_closed()).collect();
            if batch.is_empty() {
                continue;
            }
            self.write_batch(&db, statement, batch).await;
        }
    }

    async fn write_batch<D: Dialect>(
        &self,
        db: &Db<D>,
        statement: Option<&'static str>,
        batch: Vec<Pending>,
    ) {
        let Some(statement) = statement else {
            for p in batch {
                let _ = p.reply.send(Batched::Alone);
            }
            return;
        };
        let rows = match db.fetch_all(statement, &[Arg::from(array(&batch))]).await {
            Ok(rows) => rows,
            // Refused (a repeated request id, a token id in use): nothing was written.
            Err(sqlx::Error::Database(_)) => {
                for p in batch {
                    let _ = p.reply.send(Batched::Alone);
                }
                return;
            }
            Err(e) => {
                let busy = matches!(e, sqlx::Error::PoolTimedOut);
                let text = e.to_string();
                for p in batch {
                    let error = if busy {
                        StoreError::Busy
                    } else {
                        StoreError::Unavailable(text.clone().into())
                    };
                    let _ = p.reply.send(Batched::Failed(error));
                }
                return;
            }
        };
        {
            let mut state = self.lock();
            state.committed.0 += 1;
            state.committed.1 += batch.len();
        }
        for p in batch {
            let row = rows
                .iter()
                .find(|r| r.text("id").is_ok_and(|id| id == p.id));
            let outcome = match row {
                Some(row) if row.int("inserted").is_ok_and(|n| n == 1) => {
                    match row.opt_time("lease_until") {
                        Ok(lease) => Batched::Inserted(lease),
                        Err(e) => Batched::Failed(e.into()),
                    }
                }
                Some(_) => Batched::NotClaimed,
                None => Batched::Failed(StoreError::Corrupt(
                    "the batch's answer has no row for a request".into(),
                )),
            };
            let _ = p.reply.send(outcome);
        }
    }
}

/// A running writer's slot. A writer that panics gives it back, and the requests still
/// queued are told to write alone (those of its batch learn it from their dropped reply):
/// no request waits for a writer that is gone, and new requests start new writers.
struct Writing(Arc<InsertBatcher>);

impl Drop for Writing {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.0.lock();
            state.writers = state.writers.saturating_sub(1);
            for p in state.queue.drain(..) {
                let _ = p.reply.send(Batched::Alone);
            }
        }
    }
}

/// The batch's records as one JSON array.
fn array(batch: &[Pending]) -> String {
    let mut out = String::with_capacity(batch.iter().map(|p| p.row.len() + 1).sum::<usize>() + 1);
    out.push('[');
    for (i, p) in batch.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&p.row);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that panics gives its slot back and sends the queued requests to write
    /// alone, instead of leaving them waiting for it.
    #[tokio::test]
    async fn a_panicking_writer_gives_back_its_slot_and_the_queue() {
        let batcher = Arc::new(InsertBatcher::default());
        let (reply, answer) = oneshot::channel();
        {
            let mut state = batcher.lock();
            state.writers = 1;
            state.queue.push_back(Pending {
                id: "npv_1".into(),
                row: "{}".into(),
                reply,
            });
        }
        let writer = Arc::clone(&batcher);
        let crashed = tokio::spawn(async move {
            let _slot = Writing(writer);
            panic!("a writer fails");
        })
        .await;
        assert!(crashed.is_err());
        assert!(matches!(answer.await, Ok(Batched::Alone)));
        let state = batcher.lock();
        assert_eq!((state.writers, state.queue.len()), (0, 0));
    }
}
