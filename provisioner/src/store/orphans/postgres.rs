//! `OrphanStore` for PostgreSQL: each write is one statement (an upsert on the server key,
//! or a conditional `UPDATE … RETURNING` that takes the row lock), so replicas that find the
//! same server, or retry the same orphan, agree on one row.
use crate::store::PostgresStore;

/// The two timestamps as the RFC 3339 text the codec parses.
macro_rules! timestamps {
    () => {
        "to_char(first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS \
         first_seen, to_char(updated_at AT TIME ZONE 'UTC', \
         'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS updated_at"
    };
}

macro_rules! returning {
    () => {
        concat!(" RETURNING ", orphan_columns!(), ", ", timestamps!())
    };
}

const RECORD: &str = concat!(
    "INSERT INTO orphans (",
    orphan_columns!(),
    ", first_seen, updated_at, server_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11::timestamptz, $12::timestamptz, $13) ON CONFLICT (provider, server_key) DO UPDATE SET \
     state = CASE WHEN orphans.state = 'deleted' THEN 'pending' ELSE orphans.state END, \
     updated_at = CASE WHEN orphans.state = 'deleted' THEN excluded.updated_at \
     ELSE orphans.updated_at END",
    returning!()
);

const ATTEMPT: &str = concat!(
    "UPDATE orphans SET attempts = attempts + 1, \
     state = CASE WHEN $1::text IS NULL THEN 'deleted' ELSE state END, \
     last_error = COALESCE($1::text, last_error), updated_at = $2::timestamptz \
     WHERE id = $3 AND state = $4",
    returning!()
);

const ADOPT: &str = concat!(
    "UPDATE orphans SET state = 'adopted', updated_at = $1::timestamptz \
     WHERE id = $2 AND state = 'pending'",
    returning!()
);

const GET: &str = concat!(
    "SELECT ",
    orphan_columns!(),
    ", ",
    timestamps!(),
    " FROM orphans WHERE id = $1"
);

const LIST: &str = concat!(
    "SELECT ",
    orphan_columns!(),
    ", ",
    timestamps!(),
    " FROM orphans ORDER BY orphans.first_seen, id"
);

sql_orphan_store!(PostgresStore, RECORD, GET, LIST, ATTEMPT, ADOPT);

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;

    use futures::FutureExt as _;

    use crate::store::PostgresStore;

    #[tokio::test]
    async fn postgres_store_passes_orphan_conformance() {
        let Some(url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
            eprintln!(
                "skipping postgres_store_passes_orphan_conformance: LEVELRAIL_TEST_POSTGRES_URL unset"
            );
            return;
        };
        let url = url
            .into_string()
            .expect("LEVELRAIL_TEST_POSTGRES_URL is not UTF-8");
        let (store, schema) = PostgresStore::connect_isolated_for_tests(&url)
            .await
            .expect("postgres store opens in a fresh schema");

        let outcome = AssertUnwindSafe(super::super::conformance::run(&store))
            .catch_unwind()
            .await;

        store
            .drop_isolated_schema_for_tests(&schema)
            .await
            .expect("test schema drops");
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
