//! The handle stores hold: a pool, and write transactions, over one dialect.
use std::fmt;
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{Connection as _, Pool, Transaction};
use time::OffsetDateTime;

use crate::announce::Announcer;
use crate::dialect::Conn;
use crate::gate::{Class, WriterGate, WriterTurn};
use crate::group::GroupCommit;
use crate::{DbError, Dialect, Row, UniqueViolation, Value};

/// The connection pools of a database of dialect `D`: one for writes, and one for reads
/// (the same pool on PostgreSQL and for an in-memory SQLite database). On a SQLite file,
/// writes go to the one writer's connection, which its queue hands from turn to turn, so
/// writers queue in this process instead of sleeping in SQLite's busy handler; readers use
/// their own read-only connections, and the writer pool only serves tests and tools.
///
/// A handle does the work of one [`Class`]: [`Db::background`] gives the handle for
/// background work. On PostgreSQL it has pools of its own, so a busy background cannot
/// take the API's connections; on a SQLite file both share the one writer, whose queue
/// serves the API first.
pub struct Db<D: Dialect> {
    pool: Pool<D::Db>,
    read: Pool<D::Db>,
    pub(crate) class: Class,
    /// The writer's queue, with its connection (a SQLite file).
    gate: Option<Arc<WriterGate<Conn<D>>>>,
    /// Group commit of API writes at the one writer (a SQLite file).
    pub(crate) group: Option<Arc<GroupCommit>>,
    /// Background work's own pool, where it has one.
    background: Option<Pool<D::Db>>,
    /// The sender of announcements to other processes (PostgreSQL).
    pub(crate) announcer: Option<Arc<Announcer>>,
    /// Background work tied to this database's life (SQLite's checkpointer), stopped when
    /// the last handle goes.
    _tasks: Option<Arc<TaskGuard>>,
}

impl<D: Dialect> Clone for Db<D> {
    fn clone(&self) -> Self {
        Db {
            pool: self.pool.clone(),
            read: self.read.clone(),
            class: self.class,
            gate: self.gate.clone(),
            group: self.group.clone(),
            background: self.background.clone(),
            announcer: self.announcer.clone(),
            _tasks: self._tasks.clone(),
        }
    }
}

/// Aborts a background task when dropped.
#[derive(Debug)]
pub(crate) struct TaskGuard(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a statement only reads (it may then run on a read-only connection).
fn is_read(sql: &str) -> bool {
    sql.trim_start()
        .get(..6)
        .is_some_and(|head| head.eq_ignore_ascii_case("SELECT"))
}

impl<D: Dialect> fmt::Debug for Db<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Db<{}>", D::NAME)
    }
}

impl<D: Dialect> Db<D> {
    /// One pool for everything.
    pub(crate) fn new(pool: Pool<D::Db>) -> Self {
        Db {
            read: pool.clone(),
            pool,
            class: Class::Api,
            gate: None,
            group: None,
            background: None,
            announcer: None,
            _tasks: None,
        }
    }

    /// One pool for the API and another for background work.
    pub(crate) fn with_background(pool: Pool<D::Db>, background: Pool<D::Db>) -> Self {
        Db {
            background: Some(background),
            ..Db::new(pool)
        }
    }

    /// A writer pool with its queue, a separate pool of read-only connections, and the
    /// background work that lives as long as they do.
    pub(crate) fn split(
        pool: Pool<D::Db>,
        read: Pool<D::Db>,
        gate: Arc<WriterGate<Conn<D>>>,
        tasks: Option<TaskGuard>,
    ) -> Self {
        Db {
            pool,
            read,
            class: Class::Api,
            gate: Some(gate),
            group: Some(Arc::new(GroupCommit::default())),
            background: None,
            announcer: None,
            _tasks: tasks.map(Arc::new),
        }
    }

    /// The handle for background work (see [`Db`]).
    pub fn background(&self) -> Self {
        let mut db = self.clone();
        db.class = Class::Background;
        if let Some(pool) = &self.background {
            db.pool = pool.clone();
            db.read = pool.clone();
        }
        db
    }

    /// The writer's turn, with its connection, where the writer has a queue. A transaction
    /// that a caller who went away left open on it is rolled back first.
    pub(crate) async fn turn(&self) -> Result<Option<WriterTurn<Conn<D>>>, sqlx::Error> {
        let Some(gate) = &self.gate else {
            return Ok(None);
        };
        let mut turn = gate.enter(self.class).await?;
        if turn.unsettled() && roll_back::<D>(&mut turn).await.is_err() {
            // It could not be rolled back: a new connection, in this same turn.
            turn.reconnect().await?;
        }
        Ok(Some(turn))
    }

    /// A connection to write on: the writer's, with its turn, or one of the pool's.
    async fn writer(&self) -> Result<Writer<D>, sqlx::Error> {
        Ok(match self.turn().await? {
            Some(turn) => Writer::Turn(turn),
            None => Writer::Pooled(self.pool.acquire().await?),
        })
    }

    /// The writer pool, for backend-specific tests and tools. On a SQLite file its
    /// connection is not the one writes go to: it writes beside it, and SQLite's busy
    /// timeout then decides who waits.
    pub fn pool(&self) -> &Pool<D::Db> {
        &self.pool
    }

    /// Runs one statement in its own transaction; the number of rows it changed.
    pub async fn execute(&self, sql: &'static str, args: &[Value]) -> Result<u64, sqlx::Error> {
        let mut conn = self.writer().await?;
        conn.unsettle();
        let done = D::execute(&mut conn, sql, args).await;
        conn.ran(done)
    }

    /// Every row a query returns.
    pub async fn fetch_all(
        &self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Vec<Row>, sqlx::Error> {
        if is_read(sql) {
            let mut conn = self.read.acquire().await?;
            return D::fetch_all(&mut conn, sql, args).await;
        }
        let mut conn = self.writer().await?;
        conn.unsettle();
        let done = D::fetch_all(&mut conn, sql, args).await;
        conn.ran(done)
    }

    /// The first row a query returns.
    pub async fn fetch_optional(
        &self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Option<Row>, sqlx::Error> {
        Ok(self.fetch_all(sql, args).await?.into_iter().next())
    }

    /// Takes a connection to write on, to keep for several statements (see [`Held`]).
    pub async fn hold(&self) -> Result<Held<D>, sqlx::Error> {
        Ok(Held {
            conn: self.writer().await?,
        })
    }

    /// Opens a write transaction (with [`Dialect::BEGIN_WRITE`]). Dropping it uncommitted
    /// rolls it back (at once, in a task of its own).
    pub async fn write(&self) -> Result<Tx<D>, sqlx::Error> {
        let tx = match self.turn().await? {
            Some(mut turn) => {
                // Unsettled until it ends: if its caller goes away before, the next turn
                // rolls it back.
                turn.unsettle();
                let begun = D::execute(&mut turn, D::BEGIN_WRITE, &[]).await;
                checked(&mut turn, begun)?;
                TxOn::Writer(turn)
            }
            None => TxOn::Pool(self.pool.begin_with(D::BEGIN_WRITE).await?),
        };
        Ok(Tx { tx: Some(tx) })
    }

    /// The database's clock, which several processes sharing the database agree on (a
    /// lease taken by one and checked by another); `None` for SQLite, embedded in this
    /// process alone, whose own clock then decides.
    pub async fn now(&self) -> Result<Option<OffsetDateTime>, DbError> {
        let Some(sql) = D::NOW else {
            return Ok(None);
        };
        let row = self
            .fetch_optional(sql, &[])
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        Ok(Some(row.time("now")?))
    }

    /// Tells the processes listening on `channel` (see [`Db::listen`]) `payload`, soon
    /// after this call and without waiting for it: call it once the change it announces
    /// has committed. Nothing listens to a database only this process uses (SQLite), where
    /// it does nothing.
    pub fn announce(&self, channel: &'static str, payload: String) {
        if let Some(announcer) = &self.announcer {
            announcer.announce(channel, payload);
        }
    }

    /// This process's listener of `channel` (see [`Dialect::listen`]).
    pub async fn listen(&self, channel: &str) -> Result<Option<crate::Listener>, sqlx::Error> {
        D::listen(&self.pool, channel).await
    }

    /// The unique key `e` violated, if any.
    pub fn unique_violation(e: &sqlx::Error) -> Option<UniqueViolation> {
        D::unique_violation(e)
    }

    /// Closes every connection (the writer's once the turns already in line have ended).
    pub async fn close(&self) {
        if let Some(tasks) = &self._tasks {
            tasks.0.abort();
        }
        if let Some(announcer) = &self.announcer {
            announcer.stop();
        }
        if let Some(gate) = &self.gate
            && let Some(conn) = gate.close().await
        {
            let _ = conn.close().await;
        }
        self.pool.close().await;
        self.read.close().await;
        if let Some(pool) = &self.background {
            pool.close().await;
        }
    }
}

/// Rolls back whatever transaction is open on the writer's connection, and marks it
/// settled. One that cannot be rolled back is given up (the next turn opens another).
pub(crate) async fn roll_back<D: Dialect>(
    turn: &mut WriterTurn<Conn<D>>,
) -> Result<(), sqlx::Error> {
    match D::execute(turn, "ROLLBACK", &[]).await {
        Ok(_) => {}
        // None was open (it had ended, or never begun, or SQLite rolled it back itself).
        Err(e)
            if e.as_database_error()
                .is_some_and(|d| d.message().contains("no transaction is active")) => {}
        Err(e) => {
            turn.give_up();
            return Err(e);
        }
    }
    turn.settle();
    Ok(())
}

/// `done`, a statement's outcome on the writer's connection, after giving the connection
/// up if it failed itself (its thread, its I/O) rather than the database refusing the
/// statement.
fn checked<C, T>(turn: &mut WriterTurn<C>, done: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
    if let Err(e) = &done
        && e.as_database_error().is_none()
    {
        turn.give_up();
    }
    done
}

/// A connection to write on.
enum Writer<D: Dialect> {
    /// The one writer's, with its turn (a SQLite file).
    Turn(WriterTurn<Conn<D>>),
    /// One of the pool's.
    Pooled(PoolConnection<D::Db>),
}

impl<D: Dialect> Writer<D> {
    /// Marks the writer's connection as possibly inside a transaction while a statement
    /// text runs on it: one cancelled partway may leave its savepoint or transaction open.
    fn unsettle(&mut self) {
        if let Writer::Turn(turn) = self {
            turn.unsettle();
        }
    }

    /// After a statement text ran to its end: settled if it succeeded; otherwise still
    /// unsettled (the next turn rolls back whatever it left open), and given up if the
    /// connection itself failed.
    fn ran<T>(&mut self, done: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
        let Writer::Turn(turn) = self else {
            return done;
        };
        let done = checked(turn, done);
        if done.is_ok() {
            turn.settle();
        }
        done
    }
}

impl<D: Dialect> std::ops::Deref for Writer<D> {
    type Target = Conn<D>;

    fn deref(&self) -> &Conn<D> {
        match self {
            Writer::Turn(turn) => turn,
            Writer::Pooled(conn) => conn,
        }
    }
}

impl<D: Dialect> std::ops::DerefMut for Writer<D> {
    fn deref_mut(&mut self) -> &mut Conn<D> {
        match self {
            Writer::Turn(turn) => turn,
            Writer::Pooled(conn) => conn,
        }
    }
}

/// A write transaction.
pub struct Tx<D: Dialect> {
    /// `None` once ended.
    tx: Option<TxOn<D>>,
}

enum TxOn<D: Dialect> {
    /// On the one writer's connection, begun and ended by its own statements.
    Writer(WriterTurn<Conn<D>>),
    /// On a pool's connection.
    Pool(Transaction<'static, D::Db>),
}

impl<D: Dialect> Drop for Tx<D> {
    /// One dropped open (its caller returned early, or went away) on the writer is rolled
    /// back at once, in the turn it holds, so that SQLite's write lock is not kept until
    /// the next write; without a runtime, the next turn rolls it back. On a pool's
    /// connection, sqlx does the same.
    fn drop(&mut self) {
        if let Some(TxOn::Writer(mut turn)) = self.tx.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = roll_back::<D>(&mut turn).await;
            });
        }
    }
}

impl<D: Dialect> fmt::Debug for Tx<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tx<{}>", D::NAME)
    }
}

impl<D: Dialect> Tx<D> {
    /// Runs one statement; the number of rows it changed.
    pub async fn execute(&mut self, sql: &'static str, args: &[Value]) -> Result<u64, sqlx::Error> {
        match self.open() {
            TxOn::Writer(turn) => {
                let done = D::execute(turn, sql, args).await;
                checked(turn, done)
            }
            TxOn::Pool(tx) => D::execute(tx, sql, args).await,
        }
    }

    /// Every row a query returns.
    pub async fn fetch_all(
        &mut self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Vec<Row>, sqlx::Error> {
        match self.open() {
            TxOn::Writer(turn) => {
                let done = D::fetch_all(turn, sql, args).await;
                checked(turn, done)
            }
            TxOn::Pool(tx) => D::fetch_all(tx, sql, args).await,
        }
    }

    /// The first row a query returns.
    pub async fn fetch_optional(
        &mut self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Option<Row>, sqlx::Error> {
        Ok(self.fetch_all(sql, args).await?.into_iter().next())
    }

    /// Commits. One that fails on the writer stays unsettled: the next turn rolls back
    /// whatever it left open.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        match self.end() {
            TxOn::Writer(mut turn) => {
                let done = D::execute(&mut turn, "COMMIT", &[]).await;
                checked(&mut turn, done)?;
                turn.settle();
                Ok(())
            }
            TxOn::Pool(tx) => tx.commit().await,
        }
    }

    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        match self.end() {
            TxOn::Writer(mut turn) => roll_back::<D>(&mut turn).await,
            TxOn::Pool(tx) => tx.rollback().await,
        }
    }

    /// The transaction, open: it ends only in `commit` and `rollback`, which take it.
    fn open(&mut self) -> &mut TxOn<D> {
        self.tx
            .as_mut()
            .expect("a transaction is open until it ends")
    }

    /// The transaction, taken to end it.
    fn end(&mut self) -> TxOn<D> {
        self.tx.take().expect("a transaction ends once")
    }
}

/// A connection to write on kept for several statements, each committed on its own. sqlx
/// checks a connection with a round trip each time it goes back to the pool: a task that
/// writes statement after statement (a group-commit writer) holds one instead of taking
/// one per statement. Given back when dropped; drop one whose statement failed for a
/// reason other than the database's refusal of its data (the server may have ended the
/// session). On a SQLite file it is the one writer's, with its turn: every other write
/// waits while it lives, so hold it for a burst of statements only.
pub struct Held<D: Dialect> {
    conn: Writer<D>,
}

impl<D: Dialect> fmt::Debug for Held<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Held<{}>", D::NAME)
    }
}

impl<D: Dialect> Held<D> {
    /// Every row a statement returns (committed on its own).
    pub async fn fetch_all(
        &mut self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Vec<Row>, sqlx::Error> {
        self.conn.unsettle();
        let done = D::fetch_all(&mut self.conn, sql, args).await;
        self.conn.ran(done)
    }
}
