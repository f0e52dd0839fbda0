//! PostgreSQL, for several replicas: timestamps as `TIMESTAMPTZ`, and throw-away schemas
//! that let parallel tests share one server.
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, RwLock};
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use sqlx::migrate::MigrateError;
use sqlx::postgres::{
    PgArguments, PgConnectOptions, PgConnection, PgDatabaseError, PgPool, PgPoolOptions, PgRow,
    PgSslMode,
};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Column as _, Connection as _, Executor as _, Row as _};
use sqlx::{TypeInfo as _, ValueRef as _};

use crate::announce::Announcer;
use crate::dialect::Conn;
use crate::row::Cell;
use crate::{Array, Db, Dialect, Migrations, Row, UniqueViolation, Value, to_stored_precision};

/// The PostgreSQL dialect.
#[derive(Debug, Clone, Copy)]
pub struct Postgres;

/// Prefix of the schemas made by [`Db::<Postgres>::connect_isolated_for_tests`].
const TEST_SCHEMA_PREFIX: &str = "lr_test_";

impl Dialect for Postgres {
    type Db = sqlx::Postgres;

    const NAME: &'static str = "postgres";
    // `clock_timestamp()`, not `now()`: the time of the call, not of the transaction.
    const BEGIN_WRITE: &'static str = "BEGIN";
    const NOW: Option<&'static str> = Some("SELECT clock_timestamp() AS now");

    fn connect<'a>(
        dsn: &'a str,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<Db<Self>, sqlx::Error>> {
        Box::pin(Db::<Postgres>::connect(dsn, migrations))
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
        pool: &'a PgPool,
        channel: &'a str,
    ) -> BoxFuture<'a, Result<Option<crate::Listener>, sqlx::Error>> {
        Box::pin(async move { Ok(Some(crate::Listener::open(pool, channel).await?)) })
    }

    fn migrate<'a>(
        conn: &'a mut PgConnection,
        migrations: &'a Migrations,
    ) -> BoxFuture<'a, Result<(), MigrateError>> {
        // sqlx serialises concurrent migrators with an advisory lock, so replicas may start
        // together.
        Box::pin(async move {
            let mut migrator = (migrations.postgres)();
            migrator.dangerous_set_table_name(migrations.table);
            // `run` on a connection fails to prove its future `Send`; it does exactly this.
            migrator.run_direct(None, conn, false).await
        })
    }

    /// PostgreSQL names the table and the constraint; the constraint's columns come from
    /// the catalog, read at connect ([`load_keys`]). The detail text
    /// (`Key (provider, server_key)=(…) already exists.`) is a fallback only: the server
    /// translates it (`lc_messages`), and its values are never read.
    fn unique_violation(e: &sqlx::Error) -> Option<UniqueViolation> {
        let d = e.as_database_error().filter(|d| d.is_unique_violation())?;
        let pg = d.try_downcast_ref::<PgDatabaseError>()?;
        let table = pg.table()?.to_owned();
        let columns = match pg.constraint().and_then(|c| key_columns(&table, c)) {
            Some(columns) => columns,
            None => {
                let listed = pg.detail()?.strip_prefix("Key (")?.split_once(")=")?.0;
                listed.split(", ").map(str::to_owned).collect()
            }
        };
        Some(UniqueViolation { table, columns })
    }
}

fn bind(
    sql: &'static str,
    args: &[Value],
) -> Result<Query<'static, sqlx::Postgres, PgArguments>, sqlx::Error> {
    let mut query = sqlx::query(sql);
    for arg in args {
        query = match arg {
            Value::Text(v) => query.bind(v.clone()),
            Value::Int(v) => query.bind(*v),
            Value::Bool(v) => query.bind(*v),
            Value::Bytes(v) => query.bind(v.clone()),
            Value::Time(v) => query.bind(v.map(stored).transpose()?),
            Value::Array(Array::Text(v)) => query.bind(v.clone()),
            Value::Array(Array::Int(v)) => query.bind(v.clone()),
            Value::Array(Array::Bool(v)) => query.bind(v.clone()),
            Value::Array(Array::Bytes(v)) => query.bind(v.clone()),
            Value::Array(Array::Time(v)) => query.bind(
                v.iter()
                    .map(|t| t.map(stored).transpose())
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
    }
    Ok(query)
}

fn stored(t: time::OffsetDateTime) -> Result<time::OffsetDateTime, sqlx::Error> {
    to_stored_precision(t)
        .ok_or_else(|| sqlx::Error::Encode("timestamp outside years 1-9999".into()))
}

async fn fetch(
    conn: &mut PgConnection,
    sql: &'static str,
    args: &[Value],
) -> Result<Vec<Row>, sqlx::Error> {
    let rows = bind(sql, args)?.fetch_all(conn).await?;
    rows.iter().map(decode).collect()
}

fn decode(row: &PgRow) -> Result<Row, sqlx::Error> {
    let mut out = Row::default();
    for (i, column) in row.columns().iter().enumerate() {
        let cell = if row.try_get_raw(i)?.is_null() {
            Cell::Null
        } else {
            match column.type_info().name() {
                "INT8" => Cell::Int(row.try_get(i)?),
                "INT4" => Cell::Int(row.try_get::<i32, _>(i)?.into()),
                "INT2" => Cell::Int(row.try_get::<i16, _>(i)?.into()),
                "FLOAT8" => Cell::Real(row.try_get(i)?),
                "BOOL" => Cell::Bool(row.try_get(i)?),
                "BYTEA" => Cell::Bytes(row.try_get(i)?),
                "TIMESTAMPTZ" => Cell::Time(row.try_get(i)?),
                _ => Cell::Text(row.try_get_unchecked(i)?),
            }
        };
        out.push(column.name(), cell);
    }
    Ok(out)
}

impl Db<Postgres> {
    /// Connects to the database named by `dsn` (`postgres://…` or `postgresql://…`) and
    /// applies pending migrations.
    pub async fn connect(dsn: &str, migrations: &Migrations) -> Result<Self, sqlx::Error> {
        Self::connect_in_schema(dsn, None, migrations).await
    }

    /// Test support: creates a fresh schema `lr_test_<uuid>`, connects with every pooled
    /// connection's `search_path` set to it, and migrates it, so parallel tests sharing one
    /// server never collide. Returns the handle and the schema name.
    #[doc(hidden)]
    pub async fn connect_isolated_for_tests(
        dsn: &str,
        migrations: &Migrations,
    ) -> Result<(Self, String), sqlx::Error> {
        let schema = format!("{TEST_SCHEMA_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(dsn).await?;
        // Safe to splice: a fixed prefix and a hex UUID.
        admin
            .execute(sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE SCHEMA \"{schema}\""
            ))))
            .await?;
        admin.close().await?;
        let db = Self::connect_in_schema(dsn, Some(&schema), migrations).await?;
        Ok((db, schema))
    }

    /// Test support: drops a schema made by `connect_isolated_for_tests` and closes the
    /// pool. Refuses names that do not look like one.
    #[doc(hidden)]
    pub async fn drop_isolated_schema_for_tests(&self, schema: &str) -> Result<(), sqlx::Error> {
        let suffix = schema.strip_prefix(TEST_SCHEMA_PREFIX).unwrap_or("");
        if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(sqlx::Error::Configuration(
                "not an isolated test schema".into(),
            ));
        }
        let drop = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
        sqlx::raw_sql(AssertSqlSafe(drop))
            .execute(self.pool())
            .await?;
        self.close().await;
        Ok(())
    }

    /// Test support: runs `test` on a database in a fresh schema, dropped afterwards even
    /// when the test panics; skipped (with a note naming `name`) when
    /// `LEVELRAIL_TEST_POSTGRES_URL` names no server.
    #[doc(hidden)]
    pub async fn with_isolated_schema_for_tests<F, Fut>(
        name: &str,
        migrations: &Migrations,
        test: F,
    ) where
        F: FnOnce(Self) -> Fut,
        Fut: Future<Output = ()>,
    {
        let Some(url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
            eprintln!("skipping {name}: LEVELRAIL_TEST_POSTGRES_URL unset");
            return;
        };
        let url = url
            .into_string()
            .expect("LEVELRAIL_TEST_POSTGRES_URL is not UTF-8");
        let (db, schema) = Self::connect_isolated_for_tests(&url, migrations)
            .await
            .expect("a fresh PostgreSQL schema");

        let outcome = AssertUnwindSafe(test(db.clone())).catch_unwind().await;

        db.drop_isolated_schema_for_tests(&schema)
            .await
            .expect("the test schema drops");
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }

    async fn connect_in_schema(
        dsn: &str,
        schema: Option<&str>,
        migrations: &Migrations,
    ) -> Result<Self, sqlx::Error> {
        let options = PgConnectOptions::from_str(dsn)?;
        verified_off_host(&options)?;
        let set: Option<Arc<str>> = schema.map(|s| format!("SET search_path TO \"{s}\"").into());
        let pool_options = |connections: u32| {
            let pool = PgPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(Duration::from_secs(10))
                // See `CHECK_IDLE_AFTER`.
                .test_before_acquire(false)
                .before_acquire(|conn, meta| {
                    Box::pin(async move {
                        if meta.idle_for >= CHECK_IDLE_AFTER {
                            conn.ping().await?;
                        }
                        Ok(true)
                    })
                });
            match set.clone() {
                Some(set) => pool.after_connect(move |conn, _meta| {
                    let set = Arc::clone(&set);
                    Box::pin(async move {
                        conn.execute(sqlx::raw_sql(AssertSqlSafe(set))).await?;
                        Ok(())
                    })
                }),
                None => pool,
            }
        };
        let pool = pool_options(CONNECTIONS)
            .connect_with(options.clone())
            .await?;
        // Background work's own connections, opened as it needs them.
        let background = pool_options(BACKGROUND_CONNECTIONS).connect_lazy_with(options);
        Postgres::migrate(&mut *pool.acquire().await?, migrations).await?;
        load_keys(&pool).await?;
        let mut db = Db::with_background(pool, background.clone());
        db.announcer = Some(Arc::new(Announcer::start(background)));
        Ok(db)
    }
}

/// A server on another machine is reached only over TLS that verifies its certificate and
/// its name (`sslmode=verify-full`): with less, whoever is on the network path can read the
/// sealed credentials' rows or pose as the database. A Unix socket or a loopback address is
/// this machine.
fn verified_off_host(options: &PgConnectOptions) -> Result<(), sqlx::Error> {
    let host = options.get_host();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let local = options.get_socket().is_some()
        || host.starts_with('/')
        || bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if local || matches!(options.get_ssl_mode(), PgSslMode::VerifyFull) {
        return Ok(());
    }
    Err(sqlx::Error::Configuration(
        format!(
            "the PostgreSQL server {host} is on another machine: its URL needs \
             sslmode=verify-full (add sslrootcert=<CA file> unless a public CA signed its \
             certificate)"
        )
        .into(),
    ))
}

/// Connections of the API's pool.
pub(crate) const CONNECTIONS: u32 = 8;
/// Connections of background work's pool.
const BACKGROUND_CONNECTIONS: u32 = 2;
/// How long a pooled connection may sit idle before it is checked (a round trip) when taken
/// again; one that failed the check is replaced by a new one. sqlx checks every connection
/// as it goes back to the pool, and by default again when it is taken: one more round trip
/// to the server for each statement, and under load a wait for a core on each side, for a
/// connection that ran a statement milliseconds ago.
/// A connection can break while idle (a server restart, an idle timeout on the path);
/// one that breaks within this window fails its statement, as it would mid-statement.
pub(crate) const CHECK_IDLE_AFTER: Duration = Duration::from_secs(1);

/// The columns of every primary-key and unique constraint seen, by (table, constraint).
/// Schemas migrated alike (the isolated test schemas) agree on them.
static KEYS: LazyLock<RwLock<KeyColumns>> = LazyLock::new(Default::default);

/// (table, constraint) → the constraint's columns, in key order.
type KeyColumns = HashMap<(String, String), Vec<String>>;

/// Reads the columns of the primary-key and unique constraints of the connection's schema
/// from the catalog, so a violation is named without reading the server's (translated)
/// message.
async fn load_keys(pool: &PgPool) -> Result<(), sqlx::Error> {
    const KEYS_SQL: &str = "SELECT rel.relname::text, con.conname::text, \
         array_agg(att.attname::text ORDER BY k.ord) \
         FROM pg_constraint con \
         JOIN pg_class rel ON rel.oid = con.conrelid \
         CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord) \
         JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = k.attnum \
         WHERE con.contype IN ('p', 'u') AND con.connamespace = current_schema()::regnamespace \
         GROUP BY rel.relname, con.conname";
    let rows: Vec<(String, String, Vec<String>)> = sqlx::query_as(KEYS_SQL).fetch_all(pool).await?;
    let mut keys = KEYS.write().unwrap_or_else(|e| e.into_inner());
    for (table, constraint, columns) in rows {
        keys.insert((table, constraint), columns);
    }
    Ok(())
}

/// The columns of `constraint` on `table`, when [`load_keys`] saw it.
pub(crate) fn key_columns(table: &str, constraint: &str) -> Option<Vec<String>> {
    let keys = KEYS.read().unwrap_or_else(|e| e.into_inner());
    keys.get(&(table.to_owned(), constraint.to_owned()))
        .cloned()
}
