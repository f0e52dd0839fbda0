//! SQLite `CredentialStore`: the embedded default, one database file in the data directory
//! (WAL journal, foreign keys on, 5 s busy timeout, file mode 0600).
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Decode, Row, Type};

use super::codec::{
    CredentialRow, VerificationColumns, count_to_u64, decode_api_token, format_timestamp,
    in_card_order,
};
use super::{ApiTokenRecord, CredentialRecord, CredentialStore, StoreError};
use crate::domain::{ProviderId, Verification};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The column list every credential query reads, in `read_credential`'s terms.
macro_rules! select_credentials {
    ($tail:literal) => {
        concat!(
            "SELECT id, provider, envelope, kek_id, identity_json, saved_at, verified_ok, ",
            "verified_at, verify_message, verify_provider_code, verify_account ",
            "FROM credentials ",
            $tail
        )
    };
}

/// A `CredentialStore` in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens the database named by `dsn` (`sqlite://PATH` or `sqlite:PATH`), creating the
    /// file with mode 0600 if it is missing, and applies pending migrations. The parent
    /// directory must exist. Errors never contain the DSN.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(dsn)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: durable across process crashes, one fsync per checkpoint
            // instead of per commit.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        let in_memory = is_in_memory(dsn);
        let file = (!in_memory).then(|| options.get_filename().to_path_buf());
        if let Some(path) = &file {
            create_private_file(path).await;
        }
        let mut pool = SqlitePoolOptions::new().max_connections(4);
        if in_memory {
            // A shared in-memory database lives only while a connection is open.
            pool = pool
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        let pool = pool.connect_with(options).await?;
        if let Some(path) = &file {
            restrict_permissions(path).await;
        }
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        Ok(SqliteStore { pool })
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
/// its `-wal`/`-shm` files copy the main file's mode). An existing file is left alone here.
async fn create_private_file(path: &Path) {
    let mut open = tokio::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    open.mode(0o600);
    // Failures other than "exists" resurface, with context, when SQLite opens the file.
    let _ = open.open(path).await;
}

/// Tightens the database file (and its WAL and shared-memory files) to mode 0600: the data
/// directory holds secrets, even if enveloped. Failure is logged, without the path.
async fn restrict_permissions(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut paths = vec![path.to_path_buf()];
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            paths.push(side.into());
        }
        for (i, p) in paths.iter().enumerate() {
            let perms = std::fs::Permissions::from_mode(0o600);
            match tokio::fs::set_permissions(p, perms).await {
                Ok(()) => {}
                // The side files may not exist yet; when created they copy the main file's mode.
                Err(e) if i > 0 && e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(
                    error = %e,
                    "could not restrict the credential database file to mode 0600"
                ),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Reads one column, reporting a type mismatch as a corrupt row (naming only the column).
fn col<'r, T>(row: &'r SqliteRow, name: &str) -> Result<T, StoreError>
where
    T: Decode<'r, Sqlite> + Type<Sqlite>,
{
    row.try_get(name)
        .map_err(|_| StoreError::Corrupt(format!("column {name} has an unexpected type")))
}

fn read_credential(row: &SqliteRow) -> Result<CredentialRecord, StoreError> {
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

fn read_credentials(rows: &[SqliteRow]) -> Result<Vec<CredentialRecord>, StoreError> {
    let records = rows.iter().map(read_credential).collect::<Result<_, _>>()?;
    Ok(in_card_order(records))
}

#[async_trait]
impl CredentialStore for SqliteStore {
    async fn put_credential(&self, record: &CredentialRecord) -> Result<(), StoreError> {
        let row = CredentialRow::encode(record)?;
        // One statement, so the replacement is atomic; the new id replaces the old one and
        // the verification columns take the record's (normally NULL) values.
        sqlx::query(
            "INSERT INTO credentials (id, provider, envelope, kek_id, identity_json, saved_at, \
             verified_ok, verified_at, verify_message, verify_provider_code, verify_account) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
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
        let row = sqlx::query(select_credentials!("WHERE provider = ?"))
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
        let done = sqlx::query("DELETE FROM credentials WHERE provider = ?")
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
            "UPDATE credentials SET verified_ok = ?, verified_at = ?, verify_message = ?, \
             verify_provider_code = ?, verify_account = ? WHERE id = ? AND provider = ?",
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
        let rows = sqlx::query(select_credentials!("WHERE kek_id <> ?"))
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
            "UPDATE credentials SET envelope = ?, kek_id = ? WHERE id = ? AND envelope = ?",
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
            "INSERT INTO api_tokens (id, secret_sha256, label, created_at) VALUES (?, ?, ?, ?) \
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
        let row =
            sqlx::query("SELECT id, secret_sha256, label, created_at FROM api_tokens WHERE id = ?")
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
        let rows =
            sqlx::query("SELECT id, secret_sha256, label, created_at FROM api_tokens ORDER BY id")
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
mod tests;
