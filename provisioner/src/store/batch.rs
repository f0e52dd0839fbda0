//! Group commit over PostgreSQL: requests that arrive while others are being written go to
//! the database together, as one statement and one commit over their rows, instead of one
//! statement, one commit and one WAL flush each. The rows travel as one typed array per
//! argument (`$1` holds every request's first argument), which PostgreSQL reads in binary,
//! with no text to parse. (New provisions with their name claims and join tokens: see
//! `provisions::sql`.)
//!
//! Nothing waits to gather a batch: a writer takes what is queued when it is free, so a
//! lone request goes alone at once, and under load each statement carries the requests
//! that queued during the previous one. A batch stays under [`BATCH_BYTES`] of arguments,
//! and at most [`WRITERS`] statements run at once. On two cores, two writers with 32 KB
//! batches of JSON gave 8,200-8,900 provisions/s at a p99 of 12-14 ms where six writers
//! with 12 KB batches gave 5,900-6,800/s at 15-18 ms (the bench, interleaved; typed arrays
//! instead of JSON then gave 7,900-9,500/s): every statement and commit costs PostgreSQL
//! about the same whatever its rows, and fewer busy backends leave the cores to the API.
//! A batch the database refuses as a whole (a repeated request id, say) is not retried as
//! a batch: each of its requests is told to write alone, which names its own error.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use levelrail_db::{Array, Db, Dialect, Held, Value as Arg};

use crate::model::ports::StoreError;
use time::OffsetDateTime;
use tokio::sync::oneshot;

/// Arguments of the requests written in one statement at most, about (a larger request
/// goes alone).
const BATCH_BYTES: usize = 32 * 1024;
/// Statements in flight at once (each on its own connection of the API's pool).
const WRITERS: usize = 2;
/// The most requests waiting for a batch (about a tenth of a second of provisions here):
/// past it a request is refused at once as busy (`RESOURCE_EXHAUSTED`), never queued
/// behind seconds of work.
pub(crate) const MAX_QUEUED: usize = 1024;

/// A batch statement and the PostgreSQL array types of its arguments, in order: `$n` is
/// an array of type `types[n - 1]` holding every request's `n`th argument.
#[derive(Debug)]
pub(crate) struct BatchStatement {
    sql: String,
    types: Vec<&'static str>,
}

impl BatchStatement {
    /// The statement `sql(types)` over requests whose arguments have the types of `args`;
    /// `None` if an argument has no array type (it is an array already).
    pub(crate) fn new(args: &[Arg], sql: impl FnOnce(&[&'static str]) -> String) -> Option<Self> {
        let types = args
            .iter()
            .map(Arg::array_type)
            .collect::<Option<Vec<_>>>()?;
        Some(BatchStatement {
            sql: sql(&types),
            types,
        })
    }

    /// Whether `row` has the statement's arguments, in number and type.
    fn fits(&self, row: &[Arg]) -> bool {
        row.len() == self.types.len()
            && row
                .iter()
                .zip(&self.types)
                .all(|(a, t)| a.array_type() == Some(*t))
    }
}

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
    /// Its arguments, as the one-request statement takes them.
    row: Vec<Arg>,
    /// About how many bytes they take.
    size: usize,
    reply: oneshot::Sender<Batched>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    writers: usize,
    /// The statement; it answers one row per request with `id`, `inserted` (1 or 0) and
    /// `lease_until`.
    statement: Option<&'static BatchStatement>,
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

    /// Queues the arguments `row` of `id` for `statement` (the same for every request of
    /// this batcher) and waits for its batch to commit; a request whose arguments do not
    /// fit the statement writes alone, and one that finds [`MAX_QUEUED`] requests waiting
    /// is refused as busy. A writer is started when fewer than [`WRITERS`] run;
    /// a writer stops once the queue is empty, so none outlives its work (or its runtime).
    pub(crate) async fn insert<D: Dialect>(
        self: &Arc<Self>,
        db: &Db<D>,
        statement: &'static BatchStatement,
        id: String,
        row: Vec<Arg>,
    ) -> Batched {
        if !statement.fits(&row) {
            return Batched::Alone;
        }
        let (reply, answer) = oneshot::channel();
        let size = row.iter().map(arg_size).sum();
        let pending = Pending {
            id,
            row,
            size,
            reply,
        };
        let start = {
            let mut state = self.lock();
            if state.queue.len() >= MAX_QUEUED {
                return Batched::Failed(StoreError::Busy);
            }
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

    /// Writes batches while requests are queued, over one connection held from batch to
    /// batch (see [`Held`]: a connection taken per batch cost the server a round trip each,
    /// sqlx's check on its way back to the pool).
    async fn write<D: Dialect>(self: Arc<Self>, db: Db<D>) {
        let _slot = Writing(Arc::clone(&self));
        let mut conn = None;
        loop {
            let (statement, batch): (_, Vec<Pending>) = {
                let mut state = self.lock();
                if state.queue.is_empty() {
                    state.writers -= 1;
                    return;
                }
                let (mut n, mut bytes) = (0, 0);
                for p in &state.queue {
                    bytes += p.size;
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
            self.write_batch(&db, &mut conn, statement, batch).await;
        }
    }

    async fn write_batch<D: Dialect>(
        &self,
        db: &Db<D>,
        conn: &mut Option<Held<D>>,
        statement: Option<&'static BatchStatement>,
        mut batch: Vec<Pending>,
    ) {
        let Some(statement) = statement else {
            for p in batch {
                let _ = p.reply.send(Batched::Alone);
            }
            return;
        };
        let columns = columns(&mut batch);
        let held = match conn.take() {
            Some(held) => Ok(held),
            None => db.hold().await,
        };
        let answer = match held {
            Ok(mut held) => {
                let answer = held.fetch_all(&statement.sql, &columns).await;
                if answer.as_ref().err().is_none_or(keeps_connection) {
                    *conn = Some(held);
                }
                answer
            }
            Err(e) => Err(e),
        };
        let rows = match answer {
            Ok(rows) => rows,
            // Refused (a repeated request id, a token id in use), or an argument that
            // could not be encoded (never sent): nothing was written.
            Err(sqlx::Error::Database(_) | sqlx::Error::Encode(_)) => {
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

/// Whether a connection whose statement failed with `e` is kept for the next batch: after
/// the database refused the statement's data (a constraint, a value out of range: SQLSTATE
/// classes 22 and 23) or an argument could not be encoded (nothing was sent), it is as good
/// as before. After anything else (the server ended the session, with a FATAL error; the
/// connection broke) it is dropped, and the next batch takes a checked one.
fn keeps_connection(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Encode(_) => true,
        sqlx::Error::Database(e) => e
            .code()
            .is_some_and(|code| code.starts_with("22") || code.starts_with("23")),
        _ => false,
    }
}

/// The bytes an argument takes in a batch, about.
fn arg_size(arg: &Arg) -> usize {
    match arg {
        Arg::Text(Some(v)) => v.len() + 4,
        Arg::Bytes(Some(v)) => v.len() + 4,
        _ => 12,
    }
}

/// The batch's arguments as one array per argument (`$n` holds every request's `n`th),
/// taken out of its requests, every one of which fits the statement (see `insert`).
fn columns(batch: &mut [Pending]) -> Vec<Arg> {
    let rows = batch.len();
    let mut arrays: Vec<Array> = batch
        .first()
        .map(|p| p.row.iter().filter_map(|a| Array::of(a, rows)).collect())
        .unwrap_or_default();
    for p in batch.iter_mut() {
        for (array, arg) in arrays.iter_mut().zip(std::mem::take(&mut p.row)) {
            // Of the array's type: the request fits the statement.
            let _ = array.push(arg);
        }
    }
    arrays.into_iter().map(Arg::Array).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch's arguments go as one array per argument, in the requests' order; a request
    /// whose arguments differ in number or type from the statement's does not fit it (and
    /// writes alone).
    #[test]
    fn a_batch_is_one_array_per_argument_and_a_misfit_writes_alone() {
        let statement = BatchStatement::new(&[Arg::from("a"), Arg::Int(Some(1))], |types| {
            types.join(", ")
        })
        .expect("text and bigint have arrays");
        assert_eq!(statement.sql, "text[], bigint[]");
        assert!(!statement.fits(&[Arg::from("b"), Arg::from("not a number")]));
        assert!(!statement.fits(&[Arg::from("b")]));
        let rows = [
            vec![Arg::from("a"), Arg::Int(Some(1))],
            vec![Arg::Text(None), Arg::Int(None)],
        ];
        let mut batch = Vec::new();
        for row in rows {
            assert!(statement.fits(&row));
            batch.push(Pending {
                id: String::new(),
                row,
                size: 0,
                reply: oneshot::channel().0,
            });
        }

        let columns = columns(&mut batch);

        assert_eq!(
            columns,
            vec![
                Arg::Array(Array::Text(vec![Some("a".into()), None])),
                Arg::Array(Array::Int(vec![Some(1), None])),
            ]
        );
        assert!(
            BatchStatement::new(&[Arg::Array(Array::Int(vec![]))], |t| t.join("")).is_none(),
            "an array of arrays"
        );
    }

    /// A refusal of a statement's data keeps the writer's connection; the server ending the
    /// session (a FATAL error, which sqlx also reports as a database error) or a broken
    /// connection drops it.
    #[test]
    fn only_a_refusal_of_the_data_keeps_the_connection() {
        #[derive(Debug)]
        struct Refused(&'static str);
        impl std::fmt::Display for Refused {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "SQLSTATE {}", self.0)
            }
        }
        impl std::error::Error for Refused {}
        impl sqlx::error::DatabaseError for Refused {
            fn message(&self) -> &str {
                "refused"
            }
            fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
                Some(self.0.into())
            }
            fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
                self
            }
            fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
                self
            }
            fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
                self
            }
            fn kind(&self) -> sqlx::error::ErrorKind {
                sqlx::error::ErrorKind::Other
            }
        }
        let database = |code| sqlx::Error::Database(Box::new(Refused(code)));
        for kept in ["23505", "23514", "22008"] {
            assert!(keeps_connection(&database(kept)), "{kept}");
        }
        assert!(keeps_connection(&sqlx::Error::Encode(
            "a time out of range".into()
        )));
        // 57P01: terminated by an administrator or a server shutdown; 08006: connection
        // failure; 53300: too many connections.
        for dropped in ["57P01", "57P02", "08006", "53300", "XX000"] {
            assert!(!keeps_connection(&database(dropped)), "{dropped}");
        }
        let broken = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!keeps_connection(&sqlx::Error::Io(broken)));
        assert!(!keeps_connection(&sqlx::Error::PoolTimedOut));
    }

    /// A request that finds [`MAX_QUEUED`] requests waiting is refused at once as busy,
    /// and the queue keeps what it held.
    #[tokio::test]
    async fn a_request_past_a_full_queue_is_refused_as_busy() {
        // Arrange: both writers busy and the queue full.
        let batcher = Arc::new(InsertBatcher::default());
        {
            let mut state = batcher.lock();
            state.writers = WRITERS;
            for n in 0..MAX_QUEUED {
                state.queue.push_back(Pending {
                    id: format!("npv_{n}"),
                    row: vec![Arg::from("queued")],
                    size: 12,
                    reply: oneshot::channel().0,
                });
            }
        }
        static STATEMENT: std::sync::OnceLock<Option<BatchStatement>> = std::sync::OnceLock::new();
        let statement = STATEMENT
            .get_or_init(|| BatchStatement::new(&[Arg::from("a")], |t| t.join("")))
            .as_ref()
            .expect("text has an array");
        // A database with no tables: nothing reaches it.
        let none = levelrail_db::Migrations {
            table: "_levelrail_batch_test_migrations",
            sqlite: || sqlx::migrate::Migrator::DEFAULT,
            postgres: || sqlx::migrate::Migrator::DEFAULT,
        };
        let db = levelrail_db::Db::<levelrail_db::Sqlite>::connect("sqlite::memory:", &none)
            .await
            .expect("db");

        // Act
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            batcher.insert(&db, statement, "npv_late".into(), vec![Arg::from("late")]),
        )
        .await
        .expect("answered at once");

        // Assert
        assert!(
            matches!(answer, Batched::Failed(StoreError::Busy)),
            "{answer:?}"
        );
        assert_eq!(batcher.lock().queue.len(), MAX_QUEUED);
    }

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
                row: vec![Arg::from("npv_1")],
                size: 12,
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
