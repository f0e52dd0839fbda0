//! Group commit at a SQLite file's one writer: API writes that arrive while the writer is
//! busy are committed together, in one transaction, by whichever caller found the writer
//! idle (the leader, which runs detached so that no caller's cancellation strands the
//! others). Each operation is a batch of statements wrapped in `SAVEPOINT grouped; …;
//! RELEASE grouped`: one that fails is rolled back to its savepoint alone and answered
//! with its error, while the others commit. A group holds at most [`MAX_GROUP`]
//! operations; there is no waiting for more: a group is what queued while the previous
//! one ran. An operation whose caller went away is still committed (the caller's request
//! then has no answer; a provision inserted so is resumed by the recovery pass once its
//! lease lapses).
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::{Db, Dialect, Value};

/// The most operations one transaction commits.
pub(crate) const MAX_GROUP: usize = 64;

/// What every grouped operation must begin and end with.
pub(crate) const GROUP_SAVEPOINT: &str = "SAVEPOINT grouped;";
pub(crate) const GROUP_RELEASE: &str = "RELEASE grouped";

struct Op {
    sql: &'static str,
    args: Vec<Value>,
    done: oneshot::Sender<Result<u64, sqlx::Error>>,
}

#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Op>,
    leading: bool,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `op`; true when the caller must start a leader.
    fn push(&self, op: Op) -> bool {
        let mut q = self.lock();
        q.pending.push(op);
        !std::mem::replace(&mut q.leading, true)
    }

    /// The next group; empty (and no leader any more) when nothing is queued.
    fn take(&self) -> Vec<Op> {
        let mut q = self.lock();
        if q.pending.is_empty() {
            q.leading = false;
            return Vec::new();
        }
        let n = q.pending.len().min(MAX_GROUP);
        q.pending.drain(..n).collect()
    }
}

impl<D: Dialect> Db<D> {
    /// Runs `sql`, a batch of statements that begins with [`GROUP_SAVEPOINT`] and ends
    /// with [`GROUP_RELEASE`], atomically: with others in one transaction on a SQLite
    /// file, in a transaction of its own in memory. Returns the rows its statements
    /// changed. SQLite only: PostgreSQL cannot prepare a batch of statements (one
    /// statement of data-modifying CTEs does the same there).
    pub async fn write_grouped(
        &self,
        sql: &'static str,
        args: Vec<Value>,
    ) -> Result<u64, sqlx::Error> {
        debug_assert!(D::NAME == "sqlite", "a batch of statements on {}", D::NAME);
        debug_assert!(sql.starts_with(GROUP_SAVEPOINT) && sql.trim_end().ends_with(GROUP_RELEASE));
        let Some(group) = self.group.clone() else {
            let mut tx = self.write().await?;
            let changed = tx.execute(sql, &args).await?;
            tx.commit().await?;
            return Ok(changed);
        };
        let (done, answer) = oneshot::channel();
        if group.push(Op { sql, args, done }) {
            tokio::spawn(lead(self.clone(), group));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(sqlx::Error::WorkerCrashed))
    }
}

/// Commits groups until none is queued.
async fn lead<D: Dialect>(db: Db<D>, group: Arc<GroupCommit>) {
    let _leading = Leading(Arc::clone(&group));
    loop {
        let ops = group.take();
        if ops.is_empty() {
            return;
        }
        match commit_group(&db, &ops).await {
            Ok(results) => {
                for (op, result) in ops.into_iter().zip(results) {
                    let _ = op.done.send(result);
                }
            }
            Err(e) => {
                // The transaction failed as a whole: nothing of the group was committed. A
                // writer that stayed busy past the timeout says so to every operation.
                let why = e.to_string();
                let busy = matches!(e, sqlx::Error::PoolTimedOut);
                for op in ops {
                    let _ = op.done.send(Err(if busy {
                        sqlx::Error::PoolTimedOut
                    } else {
                        sqlx::Error::Protocol(format!("the grouped commit failed: {why}"))
                    }));
                }
            }
        }
    }
}

/// If the leader panics: no leader any more, and what is queued is answered with an error
/// (its senders dropped), so the next operation leads again and nobody waits forever.
struct Leading(Arc<GroupCommit>);

impl Drop for Leading {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut q = self.0.lock();
            q.leading = false;
            q.pending.clear();
        }
    }
}

async fn commit_group<D: Dialect>(
    db: &Db<D>,
    ops: &[Op],
) -> Result<Vec<Result<u64, sqlx::Error>>, sqlx::Error> {
    let mut tx = db.write().await?;
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        match tx.execute(op.sql, &op.args).await {
            Ok(changed) => results.push(Ok(changed)),
            Err(e) => {
                tx.execute("ROLLBACK TO grouped", &[]).await?;
                tx.execute(GROUP_RELEASE, &[]).await?;
                results.push(Err(e));
            }
        }
    }
    tx.commit().await?;
    Ok(results)
}
