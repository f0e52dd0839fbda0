//! Group commit at a SQLite file's one writer: API writes that arrive while the writer is
//! busy are committed together, in one transaction, by whichever caller found the writer
//! idle (the leader, which runs detached so that no caller's cancellation strands the
//! others). Each operation is a batch of statements wrapped in `SAVEPOINT grouped; …;
//! RELEASE grouped`: one that fails is rolled back to its savepoint alone and answered with
//! its error, while the others commit. A group holds at most [`MAX_GROUP`] operations;
//! there is no waiting for more: a group is what queued while the previous one ran. At most
//! [`MAX_QUEUED`] operations wait for a group: past that an operation is refused at once as
//! busy, never queued behind seconds of work.
//!
//! Operations of the same SQL go to SQLite's thread together, up to [`MAX_BATCH`] in one
//! hand-off (the SQL repeated, each copy's parameters renumbered): a hand-off costs more
//! than the inserts it carries. The transaction's `BEGIN IMMEDIATE` goes in the first
//! hand-off and its `COMMIT` in the last, so a group of one is one hand-off, not three.
//! When an operation fails, the transaction is rolled back and the group run again apart:
//! each batch in a savepoint of its own, and its copies in none (a savepoint per copy only
//! cost SQLite time); a batch in which one fails is undone alone and run again one
//! operation at a time, each in its own savepoint, so that the one that fails is found and
//! undone alone while the rest of the group commits. An operation whose caller went away
//! is still committed (the caller's request then has no answer; a provision inserted so is
//! resumed by the recovery pass once its lease lapses).
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

use crate::gate::Class;
use crate::{Db, Dialect, Value};

/// The most operations one transaction commits.
pub(crate) const MAX_GROUP: usize = 64;

/// The most operations waiting for a group (16 full groups, about a tenth of a second of
/// provisions here). Past it an operation is refused at once with `PoolTimedOut`, as when
/// no connection is free in time: the API answers `RESOURCE_EXHAUSTED`.
pub(crate) const MAX_QUEUED: usize = 16 * MAX_GROUP;

/// The most operations one hand-off to SQLite's thread carries. A group runs in batches of
/// 16, 8, 4, 2 and 1, so at most five batch texts per grouped SQL and way of running it are
/// ever prepared and cached by the connection (four with the transaction's begin, its end,
/// both or neither, and one in savepoints).
pub(crate) const MAX_BATCH: usize = 16;

/// What every grouped operation must begin and end with.
pub(crate) const GROUP_SAVEPOINT: &str = "SAVEPOINT grouped;";
pub(crate) const GROUP_RELEASE: &str = "RELEASE grouped";

struct Op {
    sql: &'static str,
    args: Vec<Value>,
    done: oneshot::Sender<Result<(), sqlx::Error>>,
}

#[derive(Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
    /// Groups committed in one go (without running apart).
    pub(crate) together: std::sync::atomic::AtomicUsize,
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

    /// Queues `op`; true when the caller must start a leader. A full queue refuses it.
    fn push(&self, op: Op) -> Result<bool, Op> {
        let mut q = self.lock();
        if q.pending.len() >= MAX_QUEUED {
            return Err(op);
        }
        q.pending.push(op);
        Ok(!std::mem::replace(&mut q.leading, true))
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
    /// file, in a transaction of its own in memory. SQLite only: PostgreSQL cannot prepare
    /// a batch of statements (one statement of data-modifying CTEs does the same there).
    /// Parameters are written `$1`, `$2`, …, and no other `$` may appear in `sql`.
    pub async fn write_grouped(
        &self,
        sql: &'static str,
        args: Vec<Value>,
    ) -> Result<(), sqlx::Error> {
        debug_assert!(D::NAME == "sqlite", "a batch of statements on {}", D::NAME);
        debug_assert!(group_body(sql).is_some(), "not a grouped operation: {sql}");
        // Copies of it are joined with their parameters renumbered: no literal or comment
        // may hold a `$`.
        debug_assert!(
            !sql.contains("--") && !sql.contains("/*"),
            "a comment in grouped SQL"
        );
        let Some(group) = self.group.clone() else {
            let mut tx = self.write().await?;
            tx.execute(sql, &args).await?;
            return tx.commit().await;
        };
        let (done, answer) = oneshot::channel();
        match group.push(Op { sql, args, done }) {
            Ok(true) => {
                // A group holds the API's writes: it takes the writer's turn as the API,
                // whichever handle queued its first operation.
                let mut leader = self.clone();
                leader.class = Class::Api;
                tokio::spawn(lead(leader, group));
            }
            Ok(false) => {}
            Err(_) => return Err(sqlx::Error::PoolTimedOut),
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
        match commit_group(&db, &group, &ops).await {
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
    group: &GroupCommit,
    ops: &[Op],
) -> Result<Vec<Result<(), sqlx::Error>>, sqlx::Error> {
    if commit_together(db, ops).await? {
        group
            .together
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Ok(ops.iter().map(|_| Ok(())).collect());
    }
    commit_apart(db, ops).await
}

/// The group's batches in the order they run: runs of operations of the same SQL, cut in
/// powers of two up to [`MAX_BATCH`].
fn batches(ops: &[Op]) -> Vec<&[Op]> {
    let mut out = Vec::new();
    let mut rest = ops;
    while let Some(first) = rest.first() {
        let alike = rest
            .iter()
            .take_while(|op| op.sql == first.sql && op.args.len() == first.args.len())
            .count();
        // The largest power of two not above min(alike, MAX_BATCH).
        let n = 1 << (alike.min(MAX_BATCH).ilog2());
        let (batch, next) = rest.split_at(n);
        out.push(batch);
        rest = next;
    }
    out
}

/// Commits the whole group in one transaction begun in its first hand-off and committed
/// in its last; false, with nothing committed, when a statement failed (an operation's
/// data refused, most often). Errors only when the writer cannot be had (its turn, or a
/// connection to it).
async fn commit_together<D: Dialect>(db: &Db<D>, ops: &[Op]) -> Result<bool, sqlx::Error> {
    let Some(mut turn) = db.turn().await? else {
        // No writer's queue (an in-memory database never groups).
        return Ok(false);
    };
    let batches = batches(ops);
    let last = batches.len() - 1;
    // Until it has committed or been rolled back, a turn that ends (a panic) leaves the
    // next one to roll it back.
    turn.unsettle();
    for (i, batch) in batches.into_iter().enumerate() {
        let sql = batch[0].sql;
        let params = batch[0].args.len();
        let text = fold_sql(sql, params, batch.len(), i == 0, i == last);
        let args: Vec<Value> = batch
            .iter()
            .flat_map(|op| op.args.iter().cloned())
            .collect();
        if D::execute(&mut turn, text, &args).await.is_err() {
            // Whatever it was, none of the group stays: the group runs again apart, where
            // an operation that fails is answered with its error and the others commit.
            // A rollback that fails gives the connection up, and the next turn opens
            // another.
            let _ = crate::db::roll_back::<D>(&mut turn).await;
            return Ok(false);
        }
    }
    turn.settle();
    Ok(true)
}

/// Commits the group in one transaction, each operation alone or not at all (see the
/// module's comment).
async fn commit_apart<D: Dialect>(
    db: &Db<D>,
    ops: &[Op],
) -> Result<Vec<Result<(), sqlx::Error>>, sqlx::Error> {
    let mut tx = db.write().await?;
    let mut results = Vec::with_capacity(ops.len());
    for batch in batches(ops) {
        let first = &batch[0];
        let n = batch.len();
        if n > 1 {
            let args: Vec<Value> = batch
                .iter()
                .flat_map(|op| op.args.iter().cloned())
                .collect();
            if tx
                .execute(batch_sql(first.sql, first.args.len(), n), &args)
                .await
                .is_ok()
            {
                results.extend(batch.iter().map(|_| Ok(())));
                continue;
            }
            // One of them failed: undo this batch alone, and run it one at a time.
            tx.execute("ROLLBACK TO batch", &[]).await?;
            tx.execute("RELEASE batch", &[]).await?;
        }
        for op in batch {
            match tx.execute(op.sql, &op.args).await {
                Ok(_) => results.push(Ok(())),
                Err(e) => {
                    tx.execute("ROLLBACK TO grouped", &[]).await?;
                    tx.execute(GROUP_RELEASE, &[]).await?;
                    results.push(Err(e));
                }
            }
        }
    }
    tx.commit().await?;
    Ok(results)
}

/// How a batch's copies are wrapped.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Wrap {
    /// In the savepoint `batch`.
    Savepoint,
    /// In nothing, after the transaction's `BEGIN IMMEDIATE` if the first, and before its
    /// `COMMIT` if the last.
    Fold { begin: bool, commit: bool },
}

/// `sql` repeated `n` times inside the savepoint `batch`, the parameters `$i` of the `k`-th
/// copy (from 0) renumbered `$(i + k × params)`.
fn batch_sql(sql: &'static str, params: usize, n: usize) -> &'static str {
    copies_sql(sql, params, n, Wrap::Savepoint)
}

/// The copies of [`batch_sql`] without a savepoint, after `BEGIN IMMEDIATE` if `begin`,
/// before `COMMIT` if `commit`.
fn fold_sql(sql: &'static str, params: usize, n: usize, begin: bool, commit: bool) -> &'static str {
    copies_sql(sql, params, n, Wrap::Fold { begin, commit })
}

/// The text of `n` copies of `sql`, wrapped so; built once per SQL, count and wrapping, and
/// kept for the life of the process.
fn copies_sql(sql: &'static str, params: usize, n: usize, wrap: Wrap) -> &'static str {
    type Texts = Mutex<HashMap<(&'static str, usize, usize, Wrap), &'static str>>;
    static BATCHES: OnceLock<Texts> = OnceLock::new();
    let mut texts = BATCHES
        .get_or_init(Texts::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    texts.entry((sql, params, n, wrap)).or_insert_with(|| {
        // Without their own savepoints (in a batch, its savepoint undoes them all when
        // one fails, and each is then run alone, in its own; folded, the transaction is
        // rolled back). One copy per line: no copy can comment out the next.
        let body = group_body(sql).unwrap_or(sql);
        let copies: String = (0..n)
            .map(|k| renumbered(body, k * params) + ";\n")
            .collect();
        let text = match wrap {
            Wrap::Savepoint => format!("SAVEPOINT batch;\n{copies}RELEASE batch;\n"),
            Wrap::Fold { begin, commit } => format!(
                "{}{copies}{}",
                if begin { "BEGIN IMMEDIATE;\n" } else { "" },
                if commit { "COMMIT;\n" } else { "" }
            ),
        };
        Box::leak(text.into_boxed_str())
    })
}

/// The statements of a grouped operation, between its savepoint and its release (with no
/// last semicolon); `None` if `sql` is not wrapped so.
fn group_body(sql: &str) -> Option<&str> {
    let inner = sql
        .strip_prefix(GROUP_SAVEPOINT)?
        .trim_end()
        .trim_end_matches(';')
        .trim_end()
        .strip_suffix(GROUP_RELEASE)?;
    Some(inner.trim().trim_end_matches(';').trim_end())
}

/// `sql` with every parameter `$i` written `$(i + by)`.
fn renumbered(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(i) => out.push_str(&(i + by).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{batch_sql, fold_sql, renumbered};

    #[test]
    fn renumbering_moves_every_parameter_and_nothing_else() {
        assert_eq!(
            renumbered("INSERT INTO t VALUES ($1, $12, 'x', $2)", 12),
            "INSERT INTO t VALUES ($13, $24, 'x', $14)"
        );
        assert_eq!(
            batch_sql(
                "SAVEPOINT grouped; SELECT $1; SELECT $2; RELEASE grouped",
                2,
                2
            ),
            "SAVEPOINT batch;\nSELECT $1; SELECT $2;\nSELECT $3; SELECT $4;\nRELEASE batch;\n"
        );
        // A last semicolon after the release is the same release.
        assert_eq!(
            batch_sql("SAVEPOINT grouped; SELECT $1; RELEASE grouped ; ", 1, 2),
            "SAVEPOINT batch;\nSELECT $1;\nSELECT $2;\nRELEASE batch;\n"
        );
    }

    #[test]
    fn a_folded_batch_holds_the_transactions_begin_or_end_and_no_savepoint() {
        let sql = "SAVEPOINT grouped; SELECT $1; RELEASE grouped";
        assert_eq!(
            fold_sql(sql, 1, 2, true, false),
            "BEGIN IMMEDIATE;\nSELECT $1;\nSELECT $2;\n"
        );
        assert_eq!(fold_sql(sql, 1, 1, false, false), "SELECT $1;\n");
        assert_eq!(fold_sql(sql, 1, 1, false, true), "SELECT $1;\nCOMMIT;\n");
        assert_eq!(
            fold_sql(sql, 1, 1, true, true),
            "BEGIN IMMEDIATE;\nSELECT $1;\nCOMMIT;\n"
        );
    }
}
