//! PostgreSQL `CredentialStore`: the engine for several control-plane replicas. Every write
//! is a single statement, so replicas sharing the database stay consistent without locks.
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow, Postgres};
use sqlx::{AssertSqlSafe, Connection, Decode, Executor, Row, Type};

use super::codec::{
    CredentialRow, VerificationColumns, count_to_u64, decode_api_token, format_timestamp,
    in_card_order,
};
use super::{ApiTokenRecord, CredentialRecord, CredentialStore, StoreError};
use crate::domain::{ProviderId, Verification};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// Reads a TIMESTAMPTZ column as the RFC 3339 text the shared codec parses (exact to the
/// microsecond, unlike epoch arithmetic, and needing no sqlx date-time feature).
macro_rules! utc_text {
    ($column:literal) => {
        concat!(
            "to_char(",
            $column,
            " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS ",
            $column
        )
    };
}

/// The column list every credential query reads, in `read_credential`'s terms.
macro_rules! select_credentials {
    ($tail:literal) => {
        concat!(
            "SELECT id, provider, envelope, kek_id, identity_json, ",
            utc_text!("saved_at"),
            ", verified_ok, ",
            utc_text!("verified_at"),
            ", verify_message, verify_provider_code, verify_account FROM credentials ",
            $tail
        )
    };
}

/// Prefix of the throw-away schemas made by `connect_isolated_for_tests`.
const TEST_SCHEMA_PREFIX: &str = "lr_test_";

/// A `CredentialStore` in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database named by `dsn` (`postgres://…` or `postgresql://…`) and
    /// applies pending migrations (sqlx serialises concurrent migrators with an advisory
    /// lock, so replicas may start together). Errors never contain the DSN.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(dsn, None).await
    }

    /// Test support: creates a fresh schema `lr_test_<uuid>`, connects with every pooled
    /// connection's `search_path` set to it, and migrates it, so parallel tests sharing one
    /// database never collide. Returns the store and the schema name for
    /// [`PostgresStore::drop_isolated_schema_for_tests`].
    #[doc(hidden)]
    pub async fn connect_isolated_for_tests(dsn: &str) -> Result<(Self, String), StoreError> {
        let schema = format!("{TEST_SCHEMA_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(dsn).await?;
        // Safe to splice: the name is a fixed prefix and a hex UUID.
        admin
            .execute(sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE SCHEMA \"{schema}\""
            ))))
            .await?;
        admin.close().await?;
        let store = Self::connect_in_schema(dsn, Some(&schema)).await?;
        Ok((store, schema))
    }

    /// Test support: drops a schema made by [`PostgresStore::connect_isolated_for_tests`]
    /// and closes the pool. Refuses names that do not look like one.
    #[doc(hidden)]
    pub async fn drop_isolated_schema_for_tests(&self, schema: &str) -> Result<(), StoreError> {
        let suffix = schema.strip_prefix(TEST_SCHEMA_PREFIX).unwrap_or("");
        if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::Corrupt("not an isolated test schema".into()));
        }
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
        )))
        .execute(&self.pool)
        .await?;
        self.pool.close().await;
        Ok(())
    }

    async fn connect_in_schema(dsn: &str, schema: Option<&str>) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(dsn)?;
        let mut pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10));
        if let Some(schema) = schema {
            let set: Arc<str> = format!("SET search_path TO \"{schema}\"").into();
            pool = pool.after_connect(move |conn, _meta| {
                let set = Arc::clone(&set);
                Box::pin(async move {
                    conn.execute(sqlx::raw_sql(AssertSqlSafe(set))).await?;
                    Ok(())
                })
            });
        }
        let pool = pool.connect_with(options).await?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        Ok(PostgresStore { pool })
    }
}

/// Reads one column, reporting a type mismatch as a corrupt row (naming only the column).
fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: Decode<'r, Postgres> + Type<Postgres>,
{
    row.try_get(name)
        .map_err(|_| StoreError::Corrupt(format!("column {name} has an unexpected type")))
}

fn read_credential(row: &PgRow) -> Result<CredentialRecord, StoreError> {
    CredentialRow {
        id: col(row, "id")?,
        provider: col(row, "provider")?,
        envelope: col(row, "envelope")?,
        kek_id: col(row, "kek_id")?,
        identity_json: col(row, "identity_json")?,
        saved_at: col(row, "saved_at")?,
        verified_ok: col(row, "verified_ok")?,
        verified_at: col(row, "verified_at")?,
        verify_message: col(row, "verify_message")?,
        verify_provider_code: col(row, "verify_provider_code")?,
        verify_account: col(row, "verify_account")?,
    }
    .decode()
}

fn read_credentials(rows: &[PgRow]) -> Result<Vec<CredentialRecord>, StoreError> {
    let records = rows.iter().map(read_credential).collect::<Result<_, _>>()?;
    Ok(in_card_order(records))
}

#[async_trait]
impl CredentialStore for PostgresStore {
    async fn put_credential(&self, record: &CredentialRecord) -> Result<(), StoreError> {
        let row = CredentialRow::encode(record)?;
        // One statement, so the replacement is atomic even between replicas; the new id
        // replaces the old one and the verification columns take the record's values.
        sqlx::query(
            "INSERT INTO credentials (id, provider, envelope, kek_id, identity_json, saved_at, \
             verified_ok, verified_at, verify_message, verify_provider_code, verify_account) \
             VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7, $8::timestamptz, $9, $10, $11) \
             ON CONFLICT (provider) DO UPDATE SET id = excluded.id, \
             envelope = excluded.envelope, kek_id = excluded.kek_id, \
             identity_json = excluded.identity_json, saved_at = excluded.saved_at, \
             verified_ok = excluded.verified_ok, verified_at = excluded.verified_at, \
             verify_message = excluded.verify_message, \
             verify_provider_code = excluded.verify_provider_code, \
             verify_account = excluded.verify_account",
        )
        .bind(row.id)
        .bind(row.provider)
        .bind(row.envelope)
        .bind(row.kek_id)
        .bind(row.identity_json)
        .bind(row.saved_at)
        .bind(row.verified_ok)
        .bind(row.verified_at)
        .bind(row.verify_message)
        .bind(row.verify_provider_code)
        .bind(row.verify_account)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn get_credential(
        &self,
        provider: ProviderId,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        let row = sqlx::query(select_credentials!("WHERE provider = $1"))
            .bind(provider.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_credential).transpose()
    }

    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError> {
        let rows = sqlx::query(select_credentials!(""))
            .fetch_all(&self.pool)
            .await?;
        read_credentials(&rows)
    }

    async fn delete_credential(&self, provider: ProviderId) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM credentials WHERE provider = $1")
            .bind(provider.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn record_verification(
        &self,
        provider: ProviderId,
        credential_id: &str,
        verification: &Verification,
    ) -> Result<bool, StoreError> {
        let v = VerificationColumns::encode(Some(verification))?;
        let done = sqlx::query(
            "UPDATE credentials SET verified_ok = $1, verified_at = $2::timestamptz, \
             verify_message = $3, verify_provider_code = $4, verify_account = $5 \
             WHERE id = $6 AND provider = $7",
        )
        .bind(v.ok)
        .bind(v.at)
        .bind(v.message)
        .bind(v.provider_code)
        .bind(v.account)
        .bind(credential_id.to_owned())
        .bind(provider.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_credentials_not_on_kek(
        &self,
        kek_id: &str,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let rows = sqlx::query(select_credentials!("WHERE kek_id <> $1"))
            .bind(kek_id.to_owned())
            .fetch_all(&self.pool)
            .await?;
        read_credentials(&rows)
    }

    async fn swap_envelope(
        &self,
        credential_id: &str,
        expected: &[u8],
        new_envelope: &[u8],
        new_kek_id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE credentials SET envelope = $1, kek_id = $2 WHERE id = $3 AND envelope = $4",
        )
        .bind(new_envelope.to_vec())
        .bind(new_kek_id.to_owned())
        .bind(credential_id.to_owned())
        .bind(expected.to_vec())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn put_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO api_tokens (id, secret_sha256, label, created_at) \
             VALUES ($1, $2, $3, $4::timestamptz) \
             ON CONFLICT (id) DO UPDATE SET secret_sha256 = excluded.secret_sha256, \
             label = excluded.label, created_at = excluded.created_at",
        )
        .bind(token.id.clone())
        .bind(token.secret_sha256.to_vec())
        .bind(token.label.clone())
        .bind(format_timestamp(token.created_at)?)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT id, secret_sha256, label, ",
            utc_text!("created_at"),
            " FROM api_tokens WHERE id = $1"
        ))
        .bind(id.to_owned())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let created_at: String = col(&row, "created_at")?;
        decode_api_token(
            col(&row, "id")?,
            col(&row, "secret_sha256")?,
            col(&row, "label")?,
            &created_at,
        )
        .map(Some)
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT id, secret_sha256, label, ",
            utc_text!("created_at"),
            " FROM api_tokens ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let created_at: String = col(row, "created_at")?;
                decode_api_token(
                    col(row, "id")?,
                    col(row, "secret_sha256")?,
                    col(row, "label")?,
                    &created_at,
                )
            })
            .collect()
    }

    async fn count_api_tokens(&self) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens")
            .fetch_one(&self.pool)
            .await?;
        count_to_u64(n)
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::sync::Arc;

    use futures::FutureExt;

    use super::PostgresStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_store_passes_conformance() {
        let Some(url) = std::env::var_os("LEVELRAIL_TEST_POSTGRES_URL") else {
            eprintln!(
                "skipping postgres_store_passes_conformance: LEVELRAIL_TEST_POSTGRES_URL unset"
            );
            return;
        };
        let url = url
            .into_string()
            .expect("LEVELRAIL_TEST_POSTGRES_URL is not UTF-8");
        let (store, schema) = PostgresStore::connect_isolated_for_tests(&url)
            .await
            .expect("postgres store opens in a fresh schema");

        let outcome = AssertUnwindSafe(super::super::conformance::run(Arc::new(store.clone())))
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
