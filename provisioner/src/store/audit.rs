//! `AuditStore` in SQL (and its conformance suite, run on every backend): a batch of events
//! is one statement (its rows passed as one JSON array), so the log costs the writer one
//! operation per batch, not per call. At a SQLite file that operation joins the API's
//! group commit: it takes no turn of the one writer for itself.
use std::sync::Arc;

use async_trait::async_trait;
use levelrail_db::{Dialect, Row, args, format_timestamp};

use crate::model::AuditEvent;
use crate::model::ports::{AuditStore, StoreError};
use crate::store::SqlStore;

/// Every column `read_event` decodes, in table order.
macro_rules! audit_columns {
    () => {
        "id, at, token_id, action, target, outcome, peer"
    };
}

const RECORD_POSTGRES: &str = concat!(
    "INSERT INTO audit_events (",
    audit_columns!(),
    ") SELECT ",
    audit_columns!(),
    " FROM jsonb_to_recordset($1::jsonb) AS e(id text, at timestamptz, token_id text, \
     action text, target text, outcome text, peer text)"
);

/// SQLite: one operation of the writer's group commit (see `levelrail_db`), whose SQL may
/// hold no `$` but its parameters' (`->>` names a key without a JSON path).
const RECORD_SQLITE: &str = concat!(
    "SAVEPOINT grouped; INSERT INTO audit_events (",
    audit_columns!(),
    ") SELECT value ->> 'id', value ->> 'at', value ->> 'token_id', value ->> 'action', \
     value ->> 'target', value ->> 'outcome', value ->> 'peer' FROM json_each($1); \
     RELEASE grouped"
);

const LIST_FIRST: &str = concat!(
    "SELECT ",
    audit_columns!(),
    " FROM audit_events ORDER BY id DESC LIMIT $1"
);

const LIST_BEFORE: &str = concat!(
    "SELECT ",
    audit_columns!(),
    " FROM audit_events WHERE id < $2 ORDER BY id DESC LIMIT $1"
);

fn read_event(row: &Row) -> Result<AuditEvent, StoreError> {
    Ok(AuditEvent {
        id: row.text("id")?,
        at: row.time("at")?,
        token_id: row.text("token_id")?,
        action: row.text("action")?,
        target: row.text("target")?,
        outcome: row.text("outcome")?,
        peer: row.text("peer")?,
    })
}

#[async_trait]
impl<D: Dialect> AuditStore for SqlStore<D> {
    async fn record_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::with_capacity(events.len());
        for e in events {
            let at = format_timestamp(e.at).ok_or_else(|| {
                StoreError::Corrupt(format!("audit event {} has a time outside 1-9999", e.id))
            })?;
            rows.push(serde_json::json!({
                "id": e.id,
                "at": at,
                "token_id": e.token_id,
                "action": e.action,
                "target": e.target,
                "outcome": e.outcome,
                "peer": e.peer,
            }));
        }
        let list = serde_json::Value::Array(rows).to_string();
        if D::NAME == "postgres" {
            self.db.execute(RECORD_POSTGRES, &args![list]).await?;
        } else {
            // Committed with the API's writes queued meanwhile, in their transaction: a
            // transaction of its own cost a turn of the one writer between two of the
            // API's groups (three hand-offs to SQLite's thread, and a wait for each of
            // them on busy cores), and the API's next group waited for it.
            self.db
                .write_grouped(RECORD_SQLITE, Vec::from(args![list]))
                .await?;
        }
        Ok(())
    }

    async fn list_audit(
        &self,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = match before {
            None => self.db.fetch_all(LIST_FIRST, &args![limit]).await?,
            Some(id) => self.db.fetch_all(LIST_BEFORE, &args![limit, id]).await?,
        };
        rows.iter().map(read_event).collect()
    }

    fn background(&self) -> Option<Arc<dyn AuditStore>> {
        Some(Arc::new(SqlStore::new(self.db.background())))
    }
}

/// The behaviour every `AuditStore` backend must show.
#[cfg(test)]
pub(crate) mod conformance {
    use time::macros::datetime;

    use crate::model::AuditEvent;
    use crate::model::ports::AuditStore;

    pub(crate) fn event(n: u32) -> AuditEvent {
        AuditEvent {
            id: AuditEvent::new_id(),
            at: datetime!(2026-12-05 08:00:00.123456789 UTC) + time::Duration::seconds(n.into()),
            token_id: "lrt_0123456789abcdef".into(),
            action: "ProvisionerService/Provision".into(),
            target: format!("web-{n}"),
            outcome: if n.is_multiple_of(2) {
                "OK"
            } else {
                "FAILED_PRECONDITION"
            }
            .into(),
            peer: "127.0.0.1:40000".into(),
        }
    }

    /// Runs every behaviour against `store`, which must hold no audit event yet.
    pub(crate) async fn run(store: &dyn AuditStore) {
        assert!(store.list_audit(10, None).await.expect("list").is_empty());
        // Two batches; ids are made in order, so the log reads newest first.
        let events: Vec<AuditEvent> = (0..5).map(event).collect();
        store.record_audit(&events[..2]).await.expect("first batch");
        // The log's writer records through the handle for background work, where the
        // store has one: it writes the same log.
        let writer = store.background();
        let writer: &dyn AuditStore = writer.as_deref().unwrap_or(store);
        writer
            .record_audit(&events[2..])
            .await
            .expect("second batch");
        store.record_audit(&[]).await.expect("an empty batch");

        let first = store.list_audit(3, None).await.expect("first page");
        let ids: Vec<&str> = first.iter().map(|e| e.id.as_str()).collect();
        let newest: Vec<&str> = events.iter().rev().take(3).map(|e| e.id.as_str()).collect();
        assert_eq!(ids, newest, "the first page is not the three newest events");
        assert_eq!(first[0].target, "web-4");
        assert_eq!(first[1].outcome, "FAILED_PRECONDITION");
        assert_eq!(
            first[0].at,
            datetime!(2026-12-05 08:00:04.123456 UTC),
            "times are kept to the microsecond"
        );
        let rest = store
            .list_audit(3, Some(&first[2].id))
            .await
            .expect("next page");
        let ids: Vec<&str> = rest.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, [events[1].id.as_str(), events[0].id.as_str()]);
        assert_eq!(
            rest[1],
            AuditEvent {
                at: stored_at(&events[0]),
                ..events[0].clone()
            }
        );

        // A batch holding a recorded id is refused whole.
        let again = vec![event(9), events[0].clone()];
        assert!(store.record_audit(&again).await.is_err());
        assert_eq!(store.list_audit(100, None).await.expect("list").len(), 5);
    }

    fn stored_at(e: &AuditEvent) -> time::OffsetDateTime {
        levelrail_db::to_stored_precision(e.at).expect("in range")
    }
}

#[cfg(test)]
mod tests {
    use crate::store::MemoryStore;
    use crate::store::isolated::{sqlite_store, with_postgres_store};

    #[tokio::test]
    async fn the_sqlite_store_passes_audit_conformance() {
        let (store, _dir, _path) = sqlite_store().await;
        super::conformance::run(&store).await;
    }

    /// At a SQLite file, a batch of the log joins the API's group commit: it takes no turn
    /// of the one writer for itself, so background work queued before it (which waits
    /// while the API's writes are queued) commits after it.
    #[tokio::test]
    async fn at_a_sqlite_file_the_logs_batch_joins_the_apis_group_commit() {
        use std::time::Duration;

        use levelrail_db::args;

        use crate::model::ports::AuditStore as _;
        let (store, _dir, _path) = sqlite_store().await;
        let writer = store.background().expect("a handle for the log's writer");
        let (background, logged) = (super::conformance::event(1), super::conformance::event(2));
        let held = store.db.write().await.expect("the writer");
        let first = tokio::spawn({
            let (db, id) = (store.db.background(), background.id.clone());
            async move {
                db.execute(
                    "INSERT INTO audit_events (id, at, token_id, action, target, outcome, peer) \
                     VALUES ($1, '2026-12-05T08:00:00.000000Z', 'lrt_0123456789abcdef', \
                     'ProvisionerService/Provision', 'web-1', 'OK', '127.0.0.1:40000')",
                    &args![id],
                )
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let second = tokio::spawn({
            let logged = logged.clone();
            async move { writer.record_audit(&[logged]).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(held);
        first.await.expect("task").expect("the background write");
        second.await.expect("task").expect("the log's write");
        let rows = store
            .db
            .fetch_all("SELECT id FROM audit_events ORDER BY rowid", &[])
            .await
            .expect("read");
        let ids: Vec<String> = rows.iter().map(|r| r.text("id").expect("id")).collect();
        assert_eq!(
            ids,
            [logged.id, background.id],
            "the log's batch waited for the background write queued before it"
        );
    }

    #[tokio::test]
    async fn the_postgres_store_passes_audit_conformance() {
        with_postgres_store(
            "the_postgres_store_passes_audit_conformance",
            |store| async move { super::conformance::run(&store).await },
        )
        .await;
    }

    #[tokio::test]
    async fn the_memory_store_passes_audit_conformance() {
        super::conformance::run(&MemoryStore::new()).await;
    }
}
