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
        if turn.unsettled() {
            roll_back::<D>(&mut turn).await?;
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
        D::execute(&mut conn, sql, args).await
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
        D::fetch_all(&mut conn, sql, args).await
    }

    /// The first row a query returns.
    pub async fn fetch_optional(
        &self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Option<Row>, sqlx::Error> {
        Ok(self.fetch_all(sql, args).await?.into_iter().next())
    }

    /// Takes a connection of the writer pool to keep for several statements (see [`Held`]).
    pub async fn hold(&self) -> Result<Held<D>, sqlx::Error> {
        Ok(Held {
            conn: self.writer().await?,
        })
    }

    /// Opens a write transaction (with [`Dialect::BEGIN_WRITE`]). Dropping it uncommitted
    /// rolls it back.
    pub async fn write(&self) -> Result<Tx<D>, sqlx::Error> {
        let tx = match self.turn().await? {
            Some(mut turn) => {
                // Unsettled until it ends: if it is dropped open, the next turn rolls it
                // back (sqlx's transactions do the same, on a pool's connection).
                turn.unsettle();
                D::execute(&mut turn, D::BEGIN_WRITE, &[]).await?;
                TxOn::Writer(turn)
            }
            None => TxOn::Pool(self.pool.begin_with(D::BEGIN_WRITE).await?),
        };
        Ok(Tx { tx })
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

    /// Closes every connection.
    pub async fn close(&self) {
        if let Some(tasks) = &self._tasks {
            tasks.0.abort();
        }
        if let Some(announcer) = &self.announcer {
            announcer.stop();
        }
        if let Some(conn) = self.gate.as_ref().and_then(|gate| gate.close()) {
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
        // None was open (it had ended, or never begun).
        Err(e)
            if e.as_database_error()
                .is_some_and(|d| d.message().contains("no transaction is active")) => {}
        Err(e) => {
            turn.discard();
            return Err(e);
        }
    }
    turn.settle();
    Ok(())
}

/// Ends the transaction open on the writer's connection with `sql` (`COMMIT` or
/// `ROLLBACK`). One that failed stays unsettled: the next turn rolls back whatever is left.
async fn end<D: Dialect>(
    mut turn: WriterTurn<Conn<D>>,
    sql: &'static str,
) -> Result<(), sqlx::Error> {
    D::execute(&mut turn, sql, &[]).await?;
    turn.settle();
    Ok(())
}

/// A connection to write on.
enum Writer<D: Dialect> {
    /// The one writer's, with its turn (a SQLite file).
    Turn(WriterTurn<Conn<D>>),
    /// One of the pool's.
    Pooled(PoolConnection<D::Db>),
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
    tx: TxOn<D>,
}

enum TxOn<D: Dialect> {
    /// On the one writer's connection, begun and ended by its own statements.
    Writer(WriterTurn<Conn<D>>),
    /// On a pool's connection.
    Pool(Transaction<'static, D::Db>),
}

impl<D: Dialect> TxOn<D> {
    fn conn(&mut self) -> &mut Conn<D> {
        match self {
            TxOn::Writer(turn) => turn,
            TxOn::Pool(tx) => tx,
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
        D::execute(self.tx.conn(), sql, args).await
    }

    /// Every row a query returns.
    pub async fn fetch_all(
        &mut self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Vec<Row>, sqlx::Error> {
        D::fetch_all(self.tx.conn(), sql, args).await
    }

    /// The first row a query returns.
    pub async fn fetch_optional(
        &mut self,
        sql: &'static str,
        args: &[Value],
    ) -> Result<Option<Row>, sqlx::Error> {
        Ok(self.fetch_all(sql, args).await?.into_iter().next())
    }

    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self.tx {
            TxOn::Writer(turn) => end::<D>(turn, "COMMIT").await,
            TxOn::Pool(tx) => tx.commit().await,
        }
    }

    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        match self.tx {
            TxOn::Writer(turn) => end::<D>(turn, "ROLLBACK").await,
            TxOn::Pool(tx) => tx.rollback().await,
        }
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
        D::fetch_all(&mut self.conn, sql, args).await
    }
}
