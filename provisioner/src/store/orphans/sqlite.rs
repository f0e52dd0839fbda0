//! `OrphanStore` for SQLite: each write is one statement (an upsert on the server key, or a
//! conditional `UPDATE … RETURNING`), so it is atomic without an explicit transaction.
use crate::store::SqliteStore;

macro_rules! returning {
    () => {
        concat!(" RETURNING ", orphan_columns!(), ", first_seen, updated_at")
    };
}

const RECORD: &str = concat!(
    "INSERT INTO orphans (",
    orphan_columns!(),
    ", first_seen, updated_at, server_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
     ?11, ?12, ?13) ON CONFLICT (provider, server_key) DO UPDATE SET \
     state = CASE WHEN orphans.state = 'deleted' THEN 'pending' ELSE orphans.state END, \
     updated_at = CASE WHEN orphans.state = 'deleted' THEN excluded.updated_at \
     ELSE orphans.updated_at END",
    returning!()
);

const ATTEMPT: &str = concat!(
    "UPDATE orphans SET attempts = attempts + 1, \
     state = CASE WHEN ?1 IS NULL THEN 'deleted' ELSE state END, \
     last_error = COALESCE(?1, last_error), updated_at = ?2 WHERE id = ?3 AND state = ?4",
    returning!()
);

const ADOPT: &str = concat!(
    "UPDATE orphans SET state = 'adopted', updated_at = ?1 WHERE id = ?2 AND state = 'pending'",
    returning!()
);

const GET: &str = concat!(
    "SELECT ",
    orphan_columns!(),
    ", first_seen, updated_at FROM orphans WHERE id = ?1"
);

const LIST: &str = concat!(
    "SELECT ",
    orphan_columns!(),
    ", first_seen, updated_at FROM orphans ORDER BY first_seen, id"
);

sql_orphan_store!(SqliteStore, RECORD, GET, LIST, ATTEMPT, ADOPT);

#[cfg(test)]
mod tests {
    use crate::store::SqliteStore;

    #[tokio::test]
    async fn sqlite_store_passes_orphan_conformance() {
        let dir = tempfile::tempdir().expect("temp dir");
        let dsn = format!("sqlite://{}", dir.path().join("o.db").display());
        let store = SqliteStore::connect(&dsn)
            .await
            .expect("sqlite store opens");
        super::super::conformance::run(&store).await;
    }
}
