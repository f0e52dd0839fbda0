//! SQLite, the embedded default: one database file in the data directory (WAL journal,
//! 5 s busy timeout, mode 0600), timestamps as fixed-width UTC text.
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::migrate::MigrateError;
use sqlx::query::Query;
use sqlx::sqlite::{
    SqliteArguments, SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool,
    SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Column as _, Connection as _, Row as _, TypeInfo as _, ValueRef as _};

use crate::db::TaskGuard;
use crate::dialect::Conn;
use crate::gate::{Connect, WriterGate};
use crate::row::Cell;
use crate::{Db, Dialect, Migrations, Row, UniqueViolation, Value, format_timestamp};

/// The SQLite dialect.
#[derive(Debug, Clone, Copy)]
pub struct Sqlite;

impl Dialect for Sqlite {
    type Db = sqlx::Sqlite;

    const NAME: &'static str = "sqlite";
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const NOW: Option<&'static str> = None;

    fn connect<'a>(
        dsn: &'a str,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<Db<Self>, sqlx::Error>> {
        Box::pin(Db::<Sqlite>::connect(dsn, migrations))
    }

    fn execute<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'static str,
        args: &'c [Value],
    ) -> BoxFuture<'c, Result<u64, sqlx::Error>> {
        Box::pin(async move { Ok(bind(sql, args)?.execute(conn).await?.rows_affected()) })
    }

    fn fetch_all<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'static str,
        args: &'c [Value],
    ) -> BoxFuture<'c, Result<Vec<Row>, sqlx::Error>> {
        Box::pin(async move { fetch(conn, sql, args).await })
    }

    fn listen<'a>(
        _pool: &'a SqlitePool,
        _channel: &'a str,
    ) -> BoxFuture<'a, Result<Option<crate::Listener>, sqlx::Error>> {
        Box::pin(async { Ok(None) })
    }

    fn migrate<'a>(
        conn: &'a mut SqliteConnection,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<(), MigrateError>> {
        Box::pin(async move {
            let mut migrator = (migrations.sqlite)();
            migrator.dangerous_set_table_name(migrations.table);
            // `run` on a connection fails to prove its future `Send`; it does exactly this.
            migrator.run_direct(None, conn, false).await
        })
    }

    /// SQLite says `UNIQUE constraint failed: orphans.provider, orphans.server_key`.
    fn unique_violation(e: &sqlx::Error) -> Option<UniqueViolation> {
        let d = e.as_database_error().filter(|d| d.is_unique_violation())?;
        let keys = d.message().strip_prefix("UNIQUE constraint failed: ")?;
        let mut table = String::new();
        let mut columns = Vec::new();
        for key in keys.split(", ") {
            let (t, c) = key.split_once('.')?;
            table = t.to_owned();
            columns.push(c.to_owned());
        }
        Some(UniqueViolation { table, columns })
    }
}

fn bind(
    sql: &'static str,
    args: &[Value],
) -> Result<Query<'static, sqlx::Sqlite, SqliteArguments>, sqlx::Error> {
    let mut query = sqlx::query(sql);
    for arg in args {
        query = match arg {
            Value::Text(v) => query.bind(v.clone()),
            Value::Int(v) => query.bind(*v),
            Value::Bool(v) => query.bind(*v),
            Value::Bytes(v) => query.bind(v.clone()),
            Value::Time(v) => query.bind(v.map(timestamp_text).transpose()?),
            Value::Array(a) => {
                return Err(sqlx::Error::Encode(
                    format!(
                        "SQLite has no arrays: a {} argument binds on PostgreSQL only",
                        a.sql_type()
                    )
                    .into(),
                ));
            }
        };
    }
    Ok(query)
}

fn timestamp_text(t: time::OffsetDateTime) -> Result<String, sqlx::Error> {
    format_timestamp(t).ok_or_else(|| sqlx::Error::Encode("timestamp outside years 1-9999".into()))
}

async fn fetch(
    conn: &mut SqliteConnection,
    sql: &'static str,
    args: &[Value],
) -> Result<Vec<Row>, sqlx::Error> {
    let rows = bind(sql, args)?.fetch_all(conn).await?;
    rows.iter().map(decode).collect()
}

/// SQLite types values, not columns: each cell is read as what it holds.
fn decode(row: &SqliteRow) -> Result<Row, sqlx::Error> {
    let mut out = Row::default();
    for (i, column) in row.columns().iter().enumerate() {
        let raw = row.try_get_raw(i)?;
        let cell = if raw.is_null() {
            Cell::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" | "BOOLEAN" => Cell::Int(row.try_get_unchecked(i)?),
                "REAL" | "NUMERIC" => Cell::Real(row.try_get_unchecked(i)?),
                "BLOB" => Cell::Bytes(row.try_get_unchecked(i)?),
                _ => Cell::Text(row.try_get_unchecked(i)?),
            }
        };
        out.push(column.name(), cell);
    }
    Ok(out)
}

impl Db<Sqlite> {
    /// Opens the database named by `dsn` (`sqlite://PATH`, `sqlite:PATH` or
    /// `sqlite::memory:`), creating the file with mode 0600 if it is missing, and applies
    /// pending migrations. The parent directory must exist.
    pub async fn connect(dsn: &str, migrations: &Migrations) -> Result<Self, sqlx::Error> {
        let options = SqliteConnectOptions::from_str(dsn)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: durable across process crashes, one fsync per checkpoint
            // instead of per commit.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            // Temporary files in memory: above all the sub-journal that savepoints and
            // statements inside a transaction write the pages they change to. As a
            // file, it cost a pwrite per page on the writer's thread (the profile of
            // Provision showed a sixth of its time there); it never needs to survive a
            // crash (a rolled-back transaction leaves nothing).
            .pragma("temp_store", "memory")
            .busy_timeout(Duration::from_secs(5));
        let in_memory = is_in_memory(dsn);
        let file = (!in_memory).then(|| options.get_filename().to_path_buf());
        if let Some(path) = &file {
            create_private_file(path).await;
        }
        if in_memory {
            // A shared in-memory database lives only while a connection is open; its
            // connections share one cache, so one pool serves reads and writes.
            let pool = pool_options()
                .max_connections(4)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await?;
            Sqlite::migrate(&mut *pool.acquire().await?, migrations).await?;
            return Ok(Db::new(pool));
        }
        // One writer: SQLite admits one write transaction at a time, so writers queue for
        // the writer's one connection (API requests first) rather than in SQLite's busy
        // handler. The WAL is checkpointed by a background connection, not by whichever
        // commit crosses the threshold.
        // Its statement cache holds every write's statements and the group commit's batch
        // texts (up to 25 per grouped SQL): past sqlx's 100, they would push each other out
        // and be prepared again.
        let writer = options
            .clone()
            .pragma("wal_autocheckpoint", "0")
            .statement_cache_capacity(WRITER_STATEMENTS);
        let mut conn = SqliteConnection::connect_with(&writer).await?;
        if let Some(path) = &file {
            restrict_permissions(path).await;
        }
        Sqlite::migrate(&mut conn, migrations).await?;
        let read = pool_options()
            .max_connections(READERS)
            .connect_with(options.clone().read_only(true))
            .await?;
        // Tests and tools only (see `Db::pool`): it opens a connection when first used.
        let pool = pool_options()
            .max_connections(1)
            .connect_lazy_with(writer.clone());
        let reconnect: Connect<SqliteConnection> = Box::new(move || {
            let writer = writer.clone();
            Box::pin(async move { SqliteConnection::connect_with(&writer).await })
        });
        let gate = WriterGate::with_connection(ACQUIRE_TIMEOUT, conn, reconnect);
        let checkpointer = tokio::spawn(checkpoint_every(options, CHECKPOINT_INTERVAL));
        Ok(Db::split(pool, read, gate, Some(TaskGuard(checkpointer))))
    }
}

/// How long a caller waits for a free connection before it is told the database is busy.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// What every pool of a SQLite database has in common. Its connections are not tested
/// before they are handed out: a test is a round trip to the connection's thread, and
/// nothing can hang up on a connection in this process. Each write transaction and each
/// read paid one more hand-off to SQLite's thread for it, and an acquire cancelled during
/// the test closed the connection it was testing (sqlx's `Pool::acquire` says so).
fn pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
}

/// Statements the writer's connection keeps prepared.
const WRITER_STATEMENTS: usize = 256;

/// Read-only connections of a database file (reads run beside the one writer in WAL mode).
const READERS: u32 = 4;
/// How often the write-ahead log is copied back into the database file.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// Checkpoints the WAL every `every` (passive: it never waits for or blocks the writer or
/// the readers), on a connection of its own, until aborted. Commits then only append to
/// the WAL. A failure is logged and retried at the next tick.
async fn checkpoint_every(options: SqliteConnectOptions, every: Duration) {
    let mut conn: Option<SqliteConnection> = None;
    loop {
        tokio::time::sleep(every).await;
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match SqliteConnection::connect_with(&options).await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::warn!(error = %e, "could not open the checkpoint connection");
                    continue;
                }
            },
        };
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut *c)
            .await
        {
            tracing::warn!(error = %e, "WAL checkpoint failed; retrying");
            conn = None;
        }
    }
}

/// Whether a SQLite DSN names an in-memory database (no file to protect).
fn is_in_memory(dsn: &str) -> bool {
    let rest = dsn
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    database == ":memory:" || params.split('&').any(|p| p == "mode=memory")
}

/// Creates the database file with mode 0600 before SQLite does (SQLite would use 0644, and
/// its `-wal`/`-shm` files copy the main file's mode). An existing file is left alone.
async fn create_private_file(path: &Path) {
    let mut open = tokio::fs::OpenOptions::new();
    open.write(true).create_new(true).mode(0o600);
    // Failures other than "exists" resurface, with context, when SQLite opens the file.
    let _ = open.open(path).await;
}

/// Tightens the database file and its WAL and shared-memory files to mode 0600: the data
/// directory holds envelopes and token hashes. A failure is logged, without the path.
async fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        match tokio::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).await {
            Ok(()) => {}
            // Side files appear later and then copy the main file's mode.
            Err(e) if !suffix.is_empty() && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(error = %e, "could not restrict a database file to mode 0600"),
        }
    }
}
