//! The dialects against a real SQLite file and, when `LEVELRAIL_TEST_POSTGRES_URL` names a
//! server, PostgreSQL: one generic suite, so both bind, decode and report the same.
use std::os::unix::fs::PermissionsExt as _;

use time::macros::datetime;

use crate::{Array, Db, Dialect, Migrations, Postgres, Sqlite, Value, args};

const MIGRATIONS: Migrations = Migrations {
    table: "_levelrail_db_test_migrations",
    sqlite: || sqlx::migrate!("./src/tests/migrations/sqlite"),
    postgres: || sqlx::migrate!("./src/tests/migrations/postgres"),
};

const INSERT: &str = "INSERT INTO items (id, kind, label, secret, count, flag, at) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7)";

async fn suite<D: Dialect>(db: Db<D>) {
    match db.now().await.expect("the database's clock") {
        Some(clock) => assert!(
            (clock - time::OffsetDateTime::now_utc()).abs() < time::Duration::minutes(1),
            "the {} clock is {clock}",
            D::NAME
        ),
        // Embedded in this process: its clock is the process's.
        None => assert_eq!(D::NAME, "sqlite"),
    }
    let at = datetime!(2026-12-03 22:05:25.123456789 +01:00);
    let inserted = db
        .execute(
            INSERT,
            &args!["a", "k", "one", b"s3cret".as_slice(), 7_i64, true, at],
        )
        .await
        .expect("insert");
    assert_eq!(inserted, 1);
    db.execute(
        INSERT,
        &args![
            "b",
            "k",
            "two",
            None::<Vec<u8>>,
            8_i64,
            None::<bool>,
            None::<time::OffsetDateTime>
        ],
    )
    .await
    .expect("insert with typed NULLs");

    let row = db
        .fetch_optional("SELECT * FROM items WHERE id = $1", &args!["a"])
        .await
        .expect("select")
        .expect("a row");
    assert_eq!(row.text("label").unwrap(), "one");
    assert_eq!(row.bytes("secret").unwrap(), b"s3cret");
    assert_eq!(row.int("count").unwrap(), 7);
    assert!(row.bool("flag").unwrap());
    assert_eq!(
        row.time("at").unwrap(),
        datetime!(2026-12-03 21:05:25.123456 UTC),
        "stored in UTC, to the microsecond"
    );
    let b = db
        .fetch_optional("SELECT * FROM items WHERE id = $1", &args!["b"])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.opt_time("at").unwrap(), None);
    assert_eq!(b.opt_bool("flag").unwrap(), None);

    // Timestamps compare as time in both (SQLite: as fixed-width text).
    let later = db
        .fetch_all(
            "SELECT id FROM items WHERE at > $1",
            &args![datetime!(2026-12-03 21:05:25.123455 UTC)],
        )
        .await
        .unwrap();
    assert_eq!(later.len(), 1);

    let dup = db
        .execute(
            INSERT,
            &args!["a", "x", "y", None::<Vec<u8>>, 1_i64, false, at],
        )
        .await
        .expect_err("the primary key is taken");
    let violation = Db::<D>::unique_violation(&dup).expect("a unique violation");
    assert!(violation.is("items", &["id"]), "{violation:?}");
    let dup = db
        .execute(
            INSERT,
            &args!["c", "k", "one", None::<Vec<u8>>, 1_i64, false, at],
        )
        .await
        .expect_err("the (kind, label) key is taken");
    let violation = Db::<D>::unique_violation(&dup).expect("a unique violation");
    assert!(violation.is("items", &["kind", "label"]), "{violation:?}");
    assert!(!format!("{dup} {dup:?}").contains("s3cret"));

    // A transaction dropped without commit leaves nothing.
    let mut tx = db.write().await.expect("begin");
    tx.execute("DELETE FROM items", &[]).await.expect("delete");
    drop(tx);
    let count = db
        .fetch_optional("SELECT COUNT(*) AS n FROM items", &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count.int("n").unwrap(), 2);

    let far = db
        .execute(
            "UPDATE items SET at = $1",
            &args![datetime!(9999-12-31 23:30 -01:00)],
        )
        .await
        .expect_err("year 10000 is refused");
    assert!(far.to_string().contains("outside years 1-9999"), "{far}");

    arrays(&db, at).await;
}

/// PostgreSQL binds a column of many rows as one typed array, NULLs and all, times to the
/// microsecond; SQLite has no arrays and says so, writing nothing.
async fn arrays<D: Dialect>(db: &Db<D>, at: time::OffsetDateTime) {
    const UNNEST: &str = "INSERT INTO items (id, kind, label, secret, count, flag, at) \
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], \
        $6::boolean[], $7::timestamptz[])";
    let columns = [
        Value::Array(Array::Text(vec![Some("c".into()), Some("d".into())])),
        Value::Array(Array::Text(vec![Some("arr".into()), Some("arr".into())])),
        Value::Array(Array::Text(vec![
            Some("\"q\" ü \\ ,{}".into()),
            Some("2".into()),
        ])),
        Value::Array(Array::Bytes(vec![Some(b"s3cret".to_vec()), None])),
        Value::Array(Array::Int(vec![Some(-3), Some(4)])),
        Value::Array(Array::Bool(vec![None, Some(true)])),
        Value::Array(Array::Time(vec![Some(at), None])),
    ];
    if D::NAME == "sqlite" {
        let refused = db.execute(UNNEST, &columns).await.expect_err("no arrays");
        assert!(
            refused.to_string().contains("SQLite has no arrays"),
            "{refused}"
        );
        assert!(!format!("{refused} {refused:?}").contains("s3cret"));
        return;
    }
    assert_eq!(db.execute(UNNEST, &columns).await.expect("arrays"), 2);
    let rows = db
        .fetch_all(
            "SELECT * FROM items WHERE kind = $1 ORDER BY id",
            &args!["arr"],
        )
        .await
        .expect("select");
    let read: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.text("label").unwrap(),
                r.opt_bytes("secret").unwrap(),
                r.int("count").unwrap(),
                r.opt_bool("flag").unwrap(),
                r.opt_time("at").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            (
                "\"q\" ü \\ ,{}".to_owned(),
                Some(b"s3cret".to_vec()),
                -3,
                None,
                Some(datetime!(2026-12-03 21:05:25.123456 UTC))
            ),
            ("2".to_owned(), None, 4, Some(true), None),
        ]
    );
}

#[tokio::test]
async fn sqlite_binds_decodes_and_names_violations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("items.db");

    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");

    let mode = std::fs::metadata(&path).expect("file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the database file is private");
    suite(db).await;
}

#[tokio::test]
async fn memory_opens_a_private_database_per_open() {
    let first = crate::open("memory", &MIGRATIONS).await.expect("opens");
    let second = crate::open("memory", &MIGRATIONS).await.expect("opens");
    let (crate::Opened::Sqlite(first), crate::Opened::Sqlite(second)) = (first, second) else {
        panic!("memory is SQLite");
    };

    first
        .execute(
            INSERT,
            &args![
                "a",
                "k",
                "one",
                None::<Vec<u8>>,
                1_i64,
                true,
                None::<time::OffsetDateTime>
            ],
        )
        .await
        .expect("insert");

    let seen = second.fetch_all("SELECT id FROM items", &[]).await.unwrap();
    assert!(seen.is_empty(), "two opens share no data");
}

#[tokio::test]
async fn an_unsupported_url_is_refused_without_echoing_it() {
    let err = crate::open("mysql://admin:hunter2@db.internal/x", &MIGRATIONS)
        .await
        .expect_err("mysql is not supported");

    let text = format!("{err} {err:?}");
    assert!(text.contains("unsupported database URL"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("db.internal"),
        "{text}"
    );
}

#[tokio::test]
async fn postgres_binds_decodes_and_names_violations() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "postgres_binds_decodes_and_names_violations",
        &MIGRATIONS,
        suite,
    )
    .await;
}

#[tokio::test]
async fn postgres_names_a_violated_key_from_the_catalog_not_the_translated_message() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "postgres_names_a_violated_key_from_the_catalog_not_the_translated_message",
        &MIGRATIONS,
        |_db| async {
            assert_eq!(
                crate::postgres::key_columns("items", "items_pkey"),
                Some(vec!["id".to_owned()])
            );
            assert_eq!(
                crate::postgres::key_columns("items", "items_kind_label_key"),
                Some(vec!["kind".to_owned(), "label".to_owned()])
            );
        },
    )
    .await;
}

/// A pooled connection is not checked when it ran a statement a moment ago (that check is
/// a round trip per statement), but one that sat idle is, so connections the server closed
/// meanwhile (a restart, an administrator) are replaced instead of failing the next
/// statements.
#[tokio::test]
async fn postgres_replaces_connections_the_server_closed_while_they_sat_idle() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "postgres_replaces_connections_the_server_closed_while_they_sat_idle",
        &MIGRATIONS,
        |db| async move {
            use sqlx::Connection as _;
            let pool = db.pool();
            let mut held = Vec::new();
            let mut pids = Vec::new();
            for _ in 0..3 {
                let mut conn = pool.acquire().await.expect("a connection");
                let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                    .fetch_one(&mut *conn)
                    .await
                    .expect("its server process");
                pids.push(pid);
                held.push(conn);
            }
            drop(held);
            let url = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL")
                .and_then(|u| u.into_string().ok())
                .expect("set: this test runs against a server");
            let mut admin = sqlx::PgConnection::connect(&url).await.expect("admin");
            let ended: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM unnest($1::int[]) AS p(pid) WHERE pg_terminate_backend(pid)",
            )
            .bind(&pids)
            .fetch_one(&mut admin)
            .await
            .expect("terminate");
            assert_eq!(ended, 3, "the pool's three connections were ended");
            admin.close().await.expect("close");
            tokio::time::sleep(
                crate::postgres::CHECK_IDLE_AFTER + std::time::Duration::from_millis(200),
            )
            .await;

            // The idle queue is first in, first out: with the pool's other connections
            // ahead of the three closed ones, this many statements reach one of them.
            for n in 0..crate::postgres::CONNECTIONS {
                let row = db
                    .fetch_optional("SELECT pg_backend_pid()::bigint AS pid", &[])
                    .await
                    .unwrap_or_else(|e| {
                        panic!("statement {n} after the server closed its connections: {e}")
                    })
                    .expect("a row");
                let pid = row.int("pid").expect("pid");
                assert!(
                    !pids.contains(&(pid as i32)),
                    "statement {n} ran on a closed connection"
                );
            }
        },
    )
    .await;
}

/// Two rows per operation; the second of `n`'s batch clashes on (kind, label) for every
/// third operation, which is then undone whole while the others commit.
const GROUPED: &str = "SAVEPOINT grouped; \
     INSERT INTO items (id, kind, label, count) VALUES ($1, 'g', $1, 1); \
     INSERT INTO items (id, kind, label, count) VALUES ($2, 'g', $3, 2); \
     RELEASE grouped";

async fn grouped_suite<D: Dialect>(db: Db<D>) {
    db.execute(
        "INSERT INTO items (id, kind, label, count) VALUES ('taken', 'g', 'clash', 0)",
        &[],
    )
    .await
    .expect("seed");
    let mut ops = Vec::new();
    for n in 0..150 {
        let db = db.clone();
        ops.push(tokio::spawn(async move {
            let label = if n % 3 == 0 {
                "clash".to_owned()
            } else {
                format!("second-{n}")
            };
            let args = args![format!("first-{n}"), format!("second-{n}"), label].to_vec();
            (n, db.write_grouped(GROUPED, args).await)
        }));
    }
    for op in ops {
        let (n, result) = op.await.expect("op");
        match result {
            Ok(()) => assert!(n % 3 != 0, "op {n} committed"),
            Err(e) => assert!(
                n % 3 == 0 && Db::<D>::unique_violation(&e).is_some(),
                "op {n}: {e}"
            ),
        }
    }
    let count = |sql: &'static str| {
        let db = db.clone();
        async move {
            db.fetch_optional(sql, &[])
                .await
                .expect("count")
                .expect("row")
                .int("n")
                .expect("n")
        }
    };
    // 100 operations of two rows each, none of the 50 clashing ones, and the seed.
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM items WHERE kind = 'g'").await,
        201
    );
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM items WHERE id IN ('first-0', 'first-3', 'first-147')")
            .await,
        0
    );

    // Groups where nothing fails (committed in batches of several operations at once).
    let ops: Vec<_> = (0..150)
        .map(|n| {
            let db = db.clone();
            tokio::spawn(async move {
                let args = args![format!("a-{n}"), format!("b-{n}"), format!("b-{n}")].to_vec();
                db.write_grouped(GROUPED, args).await
            })
        })
        .collect();
    for op in ops {
        op.await.expect("op").expect("committed");
    }
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM items WHERE kind = 'g'").await,
        501
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) AS n FROM items WHERE id = 'b-149' AND label = 'b-149' AND count = 2"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn sqlite_keeps_temporary_files_in_memory() {
    // The group commit's savepoints and statements write a sub-journal: in memory, not a
    // file written page by page on the writer's thread.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("temp.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    // The writer pool's connection has the writer's options (and the readers share them).
    let writer: i64 = sqlx::query_scalar("PRAGMA temp_store")
        .fetch_one(db.pool())
        .await
        .expect("writer's options");
    assert_eq!(
        writer, 2,
        "2 is MEMORY (the readers share the writer's options)"
    );
}

#[tokio::test]
async fn sqlite_hands_out_its_connections_without_testing_them_first() {
    // A test is a round trip to the connection's thread before each transaction and each
    // read, and nothing can hang up on a connection in this process.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = format!("sqlite://{}", dir.path().join("untested.db").display());
    for dsn in [file.as_str(), "sqlite::memory:"] {
        let db = Db::<Sqlite>::connect(dsn, &MIGRATIONS)
            .await
            .expect("opens");
        assert!(
            !db.pool().options().get_test_before_acquire(),
            "{dsn}: tested before each acquire"
        );
    }
}

/// The writer's connection stays with its queue, so a transaction whose caller went away
/// (its `Tx` dropped open) is still open on it when the next turn begins: that turn rolls
/// it back first, and the writes after it commit as they would have.
#[tokio::test]
async fn sqlite_a_write_transaction_dropped_open_is_rolled_back_before_the_next_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("dropped.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    let count = |id: &'static str| {
        let db = db.clone();
        async move {
            db.fetch_optional("SELECT COUNT(*) AS n FROM items WHERE id = $1", &args![id])
                .await
                .expect("count")
                .expect("row")
                .int("n")
                .expect("n")
        }
    };
    let insert = "INSERT INTO items (id, kind, label, count) VALUES ($1, 'd', $1, 0)";

    let mut tx = db.write().await.expect("begins");
    tx.execute(insert, &args!["dropped"]).await.expect("insert");
    drop(tx);
    // A statement of its own, then a transaction, then a group.
    db.execute(insert, &args!["alone"]).await.expect("alone");
    let mut tx = db.write().await.expect("begins again");
    tx.execute(insert, &args!["in-tx"]).await.expect("insert");
    tx.commit().await.expect("commits");
    let mut tx = db.write().await.expect("begins again");
    tx.execute(insert, &args!["dropped-2"])
        .await
        .expect("insert");
    drop(tx);
    db.write_grouped(GROUPED, args!["g-1", "g-2", "g-2"].to_vec())
        .await
        .expect("grouped");

    for (id, n) in [
        ("dropped", 0),
        ("alone", 1),
        ("in-tx", 1),
        ("dropped-2", 0),
        ("g-1", 1),
    ] {
        assert_eq!(count(id).await, n, "{id}");
    }
}

/// A transaction whose caller went away while it was open (its task aborted at an await)
/// is rolled back at once, not at the next write: until then SQLite's write lock would keep
/// any other connection to the file waiting (here the writer pool's, as a tool's would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_write_transaction_abandoned_mid_way_releases_the_file_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("abandoned.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    let (began, wrote) = tokio::sync::oneshot::channel();
    let abandoned = tokio::spawn({
        let db = db.clone();
        async move {
            let mut tx = db.write().await.expect("begins");
            tx.execute(
                "INSERT INTO items (id, kind, label, count) VALUES ('gone', 'a', 'gone', 0)",
                &[],
            )
            .await
            .expect("insert");
            let _ = began.send(());
            std::future::pending::<()>().await;
        }
    });
    wrote.await.expect("the transaction wrote");
    abandoned.abort();
    let _ = abandoned.await;

    // Another connection writes without waiting for the busy timeout (5 s).
    let other = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        sqlx::query("INSERT INTO items (id, kind, label, count) VALUES ('other', 'a', 'o', 0)")
            .execute(db.pool()),
    )
    .await;
    assert!(matches!(other, Ok(Ok(_))), "{other:?}");
    let gone = db
        .fetch_optional("SELECT COUNT(*) AS n FROM items WHERE id = 'gone'", &[])
        .await
        .expect("count")
        .expect("row")
        .int("n")
        .expect("n");
    assert_eq!(gone, 0);
}

/// Writes on a SQLite file go to the writer's own connection, which never goes back to a
/// pool: a pool tests a connection given back to it with a round trip to its thread before
/// the next caller may have it, and that round trip stood between every write and the next.
/// Closing the database closes it: no write is taken after.
#[tokio::test]
async fn sqlite_writes_go_to_the_writers_own_connection_until_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("writer.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    let insert = "INSERT INTO items (id, kind, label, count) VALUES ($1, 'w', $1, 0)";
    db.execute(insert, &args!["one"]).await.expect("insert");
    let mut tx = db.write().await.expect("begins");
    tx.execute(insert, &args!["two"]).await.expect("insert");
    tx.commit().await.expect("commits");
    db.write_grouped(GROUPED, args!["g-1", "g-2", "g-2"].to_vec())
        .await
        .expect("grouped");
    assert_eq!(db.pool().size(), 0, "the writer pool opened a connection");

    // Closing waits for a transaction in flight, which commits.
    let mut tx = db.write().await.expect("begins");
    tx.execute(insert, &args!["three"]).await.expect("insert");
    let closing = tokio::spawn({
        let db = db.clone();
        async move { db.close().await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        !closing.is_finished(),
        "closed with a transaction in flight"
    );
    tx.commit().await.expect("commits");
    tokio::time::timeout(std::time::Duration::from_secs(5), closing)
        .await
        .expect("closes")
        .expect("closer");
    assert!(matches!(
        db.execute(insert, &args!["four"]).await,
        Err(sqlx::Error::PoolClosed)
    ));
    let reopened = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("reopens");
    let rows = reopened
        .fetch_optional("SELECT COUNT(*) AS n FROM items WHERE kind = 'w'", &[])
        .await
        .expect("count")
        .expect("row")
        .int("n")
        .expect("n");
    assert_eq!(rows, 3, "one, two and three");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_group_commit_commits_each_operation_alone_or_not_at_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("grouped.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    grouped_suite(db.clone()).await;
    // Those without a clash committed in one go, the transaction's ends in the hand-offs
    // of their first and last batches.
    let group = db.group.as_ref().expect("a file groups");
    assert!(group.together.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

/// Past [`crate::group::MAX_QUEUED`] operations waiting for a group, an operation is
/// refused at once as busy (`PoolTimedOut`: `RESOURCE_EXHAUSTED` at the API), while the
/// writer is still taken; every one that queued commits once the writer is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_group_commit_refuses_operations_past_its_queue_as_busy() {
    // Arrange: the writer is taken, so the first group waits for it and the rest queue.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("queue.db");
    let db = Db::<Sqlite>::connect(&format!("sqlite://{}", path.display()), &MIGRATIONS)
        .await
        .expect("opens");
    let held = db.write().await.expect("writer");
    let total = crate::group::MAX_QUEUED + crate::group::MAX_GROUP + 8;

    // Act
    let ops: Vec<_> = (0..total)
        .map(|n| {
            let db = db.clone();
            tokio::spawn(async move {
                let args = args![format!("q-{n}"), format!("r-{n}"), format!("r-{n}")].to_vec();
                db.write_grouped(GROUPED, args).await
            })
        })
        .collect();
    // At least the 8 past the queue and the first group are answered while the writer is
    // taken (the leader waits up to 5 s for it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while ops.iter().filter(|op| op.is_finished()).count() < 8
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let answered_early: Vec<bool> = ops.iter().map(|op| op.is_finished()).collect();
    drop(held);

    // Assert: those answered while the writer was taken were refused; of the rest, at most
    // a queue and a group committed (any other was refused too, only answered later).
    let early = answered_early.iter().filter(|early| **early).count();
    assert!(
        early >= 8,
        "{early} of {total} answered while the writer was taken"
    );
    let mut committed = 0;
    for (op, early) in ops.into_iter().zip(answered_early) {
        match op.await.expect("op") {
            Err(sqlx::Error::PoolTimedOut) => {}
            Ok(()) if !early => committed += 1,
            other => panic!("answered early: {early}, with {other:?}"),
        }
    }
    // The queue filled before anything was refused: all of it commits.
    assert!(
        (crate::group::MAX_QUEUED..=crate::group::MAX_QUEUED + crate::group::MAX_GROUP)
            .contains(&committed),
        "{committed} committed"
    );
    let rows = db
        .fetch_optional("SELECT COUNT(*) AS n FROM items WHERE kind = 'g'", &[])
        .await
        .expect("count")
        .expect("row")
        .int("n")
        .expect("n");
    assert_eq!(usize::try_from(rows).expect("count"), 2 * committed);
}

#[tokio::test]
async fn sqlite_in_memory_grouped_writes_are_atomic_alone() {
    let crate::Opened::Sqlite(db) = crate::open("memory", &MIGRATIONS).await.expect("opens") else {
        panic!("memory is SQLite");
    };
    grouped_suite(db).await;
}

#[tokio::test]
async fn postgres_on_another_machine_needs_verified_tls_before_any_connection() {
    for url in [
        "postgres://levelrail:pa55word@db.example.invalid/levelrail",
        "postgres://levelrail:pa55word@10.1.2.3:5432/levelrail?sslmode=require",
        "postgres://levelrail:pa55word@[2001:db8::5]/levelrail?sslmode=verify-ca",
    ] {
        let err = Db::<Postgres>::connect(url, &MIGRATIONS)
            .await
            .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("sslmode=verify-full"), "{url}: {text}");
        assert!(!text.contains("pa55word"), "{text}");
    }
}

/// Announcements made faster than one statement sends them all arrive at a listener, in
/// the order they were made (many to a statement), and a database only this process uses
/// takes them without effect.
#[tokio::test]
async fn postgres_announcements_arrive_in_order_many_to_a_statement() {
    Db::<Postgres>::with_isolated_schema_for_tests(
        "postgres_announcements_arrive_in_order_many_to_a_statement",
        &MIGRATIONS,
        |db| async move {
            // A channel of this test's own: tests share the server.
            const CHANNEL: &str = "levelrail_db_test_announcements";
            const COUNT: usize = 2_000;
            let mut listener = db
                .listen(CHANNEL)
                .await
                .expect("listen")
                .expect("PostgreSQL listens");
            for i in 0..COUNT {
                db.announce(CHANNEL, format!("item-{i}"));
            }
            let mut heard = Vec::with_capacity(COUNT);
            while heard.len() < COUNT {
                let notice =
                    tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv())
                        .await
                        .expect("every announcement within 10 s")
                        .expect("the listener works");
                match notice {
                    crate::Notice::Payload(p) => heard.push(p),
                    crate::Notice::Reconnected => panic!("the listener reconnected"),
                }
            }
            let expected: Vec<String> = (0..COUNT).map(|i| format!("item-{i}")).collect();
            assert_eq!(
                heard, expected,
                "announcements arrived out of order or changed"
            );
        },
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = Db::<Sqlite>::connect(
        &format!("sqlite://{}", dir.path().join("a.db").display()),
        &MIGRATIONS,
    )
    .await
    .expect("sqlite");
    sqlite.announce("levelrail_db_test_announcements", "nobody".into());
    assert!(
        sqlite
            .listen("levelrail_db_test_announcements")
            .await
            .expect("listen")
            .is_none()
    );
}
