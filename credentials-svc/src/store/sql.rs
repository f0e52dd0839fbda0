//! `CredentialStore` in SQL, once for both dialects. Every write is a single statement, so
//! replicas sharing a PostgreSQL database stay consistent without locks.
use async_trait::async_trait;
use levelrail_db::{Db, Dialect, Migrations, Postgres, Sqlite, args};

use super::codec::{
    CredentialRow, VerificationColumns, count_to_u64, in_card_order, read_api_token,
};
use crate::model::ports::{
    ApiTokenRecord, CredentialRecord, CredentialStore, Revocation, StoreError,
};
use crate::model::{ProviderId, Verification};
use time::OffsetDateTime;

/// The credentials service's tables. The bookkeeping table keeps sqlx's default name, which
/// databases created by earlier releases already use.
pub(crate) const MIGRATIONS: Migrations = Migrations {
    table: "_sqlx_migrations",
    sqlite: || sqlx::migrate!("./migrations/sqlite"),
    postgres: || sqlx::migrate!("./migrations/postgres"),
};

/// The column list every credential query reads, in `CredentialRow::read`'s terms.
macro_rules! select_credentials {
    ($tail:literal) => {
        concat!(
            "SELECT id, provider, envelope, kek_id, identity_json, saved_at, verified_ok, ",
            "verified_at, verify_message, verify_provider_code, verify_account, ",
            "verify_permissions ",
            "FROM credentials ",
            $tail
        )
    };
}

/// The column list every API token query reads, in `read_api_token`'s terms.
macro_rules! api_token_columns {
    () => {
        "id, secret_sha256, label, created_at, revoked_at, scope, expires_at"
    };
}

/// A `CredentialStore` in a database of dialect `D`.
#[derive(Debug, Clone)]
pub struct SqlStore<D: Dialect> {
    db: Db<D>,
}

/// The embedded default: a file in the data directory.
pub type SqliteStore = SqlStore<Sqlite>;
/// The engine for several control-plane replicas.
pub type PostgresStore = SqlStore<Postgres>;

impl<D: Dialect> SqlStore<D> {
    pub(crate) fn new(db: Db<D>) -> Self {
        SqlStore { db }
    }

    /// The database, for backend-specific tests.
    pub fn db(&self) -> &Db<D> {
        &self.db
    }

    async fn read_credentials(
        &self,
        sql: &'static str,
        args: &[levelrail_db::Value],
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let rows = self.db.fetch_all(sql, args).await?;
        let records = rows
            .iter()
            .map(|row| CredentialRow::read(row)?.decode())
            .collect::<Result<_, _>>()?;
        Ok(in_card_order(records))
    }
}

impl<D: Dialect> SqlStore<D> {
    /// Opens the database named by `dsn` (SQLite: `sqlite://PATH`, `sqlite:PATH` or
    /// `sqlite::memory:`, the file created with mode 0600, its parent directory must exist;
    /// PostgreSQL: `postgres://…`) and applies pending migrations. Errors never contain the
    /// DSN.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        Ok(Self::new(D::connect(dsn, &MIGRATIONS).await?))
    }
}

#[async_trait]
impl<D: Dialect> CredentialStore for SqlStore<D> {
    async fn put_credential(&self, record: &CredentialRecord) -> Result<(), StoreError> {
        let row = CredentialRow::encode(record)?;
        // One statement, so the replacement is atomic; the new id replaces the old one and
        // the verification columns take the record's (normally NULL) values.
        self.db
            .execute(
                "INSERT INTO credentials (id, provider, envelope, kek_id, identity_json, \
                 saved_at, verified_ok, verified_at, verify_message, verify_provider_code, \
                 verify_account, verify_permissions) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                 ON CONFLICT (provider) DO UPDATE SET id = excluded.id, \
                 envelope = excluded.envelope, kek_id = excluded.kek_id, \
                 identity_json = excluded.identity_json, saved_at = excluded.saved_at, \
                 verified_ok = excluded.verified_ok, verified_at = excluded.verified_at, \
                 verify_message = excluded.verify_message, \
                 verify_provider_code = excluded.verify_provider_code, \
                 verify_account = excluded.verify_account, \
                 verify_permissions = excluded.verify_permissions",
                &row.args(),
            )
            .await?;
        Ok(())
    }

    async fn get_credential(
        &self,
        provider: ProviderId,
    ) -> Result<Option<CredentialRecord>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                select_credentials!("WHERE provider = $1"),
                &args![provider.as_str()],
            )
            .await?;
        row.map(|r| CredentialRow::read(&r)?.decode()).transpose()
    }

    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError> {
        self.read_credentials(select_credentials!(""), &[]).await
    }

    async fn delete_credential(&self, provider: ProviderId) -> Result<bool, StoreError> {
        let done = self
            .db
            .execute(
                "DELETE FROM credentials WHERE provider = $1",
                &args![provider.as_str()],
            )
            .await?;
        Ok(done > 0)
    }

    async fn record_verification(
        &self,
        provider: ProviderId,
        credential_id: &str,
        verification: &Verification,
    ) -> Result<bool, StoreError> {
        let v = VerificationColumns::encode(Some(verification))?;
        let done = self
            .db
            .execute(
                "UPDATE credentials SET verified_ok = $1, verified_at = $2, \
                 verify_message = $3, verify_provider_code = $4, verify_account = $5, \
                 verify_permissions = $8 WHERE id = $6 AND provider = $7",
                &args![
                    v.ok,
                    v.at,
                    v.message,
                    v.provider_code,
                    v.account,
                    credential_id,
                    provider.as_str(),
                    v.permissions,
                ],
            )
            .await?;
        Ok(done > 0)
    }

    async fn list_credentials_not_on_kek(
        &self,
        kek_id: &str,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        self.read_credentials(select_credentials!("WHERE kek_id <> $1"), &args![kek_id])
            .await
    }

    async fn swap_envelope(
        &self,
        credential_id: &str,
        expected: &[u8],
        new_envelope: &[u8],
        new_kek_id: &str,
    ) -> Result<bool, StoreError> {
        let done = self
            .db
            .execute(
                "UPDATE credentials SET envelope = $1, kek_id = $2 \
                 WHERE id = $3 AND envelope = $4",
                &args![new_envelope, new_kek_id, credential_id, expected],
            )
            .await?;
        Ok(done > 0)
    }

    async fn put_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
        self.db
            .execute(
                "INSERT INTO api_tokens (id, secret_sha256, label, created_at, revoked_at, \
                 scope, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (id) DO UPDATE SET secret_sha256 = excluded.secret_sha256, \
                 label = excluded.label, created_at = excluded.created_at, \
                 revoked_at = excluded.revoked_at, scope = excluded.scope, \
                 expires_at = excluded.expires_at",
                &args![
                    &token.id,
                    &token.secret_sha256,
                    &token.label,
                    super::codec::to_stored_precision(token.created_at)?,
                    token
                        .revoked_at
                        .map(super::codec::to_stored_precision)
                        .transpose()?,
                    token.scope.as_str(),
                    token
                        .expires_at
                        .map(super::codec::to_stored_precision)
                        .transpose()?,
                ],
            )
            .await?;
        Ok(())
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiTokenRecord>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                concat!(
                    "SELECT ",
                    api_token_columns!(),
                    " FROM api_tokens WHERE id = $1"
                ),
                &args![id],
            )
            .await?;
        row.as_ref().map(read_api_token).transpose()
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
        let rows = self
            .db
            .fetch_all(
                concat!(
                    "SELECT ",
                    api_token_columns!(),
                    " FROM api_tokens ORDER BY id"
                ),
                &[],
            )
            .await?;
        rows.iter().map(read_api_token).collect()
    }

    async fn count_api_tokens(&self) -> Result<u64, StoreError> {
        let row = self
            .db
            .fetch_optional("SELECT COUNT(*) AS n FROM api_tokens", &[])
            .await?;
        count_to_u64(row.map(|r| r.int("n")).transpose()?.unwrap_or(0))
    }

    async fn revoke_api_token(
        &self,
        id: &str,
        at: OffsetDateTime,
    ) -> Result<Revocation, StoreError> {
        // An admin token is revoked only while another live admin token that never expires
        // remains, so someone can always manage the tokens. Concurrent revocations queue:
        // SQLite's write transaction admits one at a time, and on PostgreSQL the live
        // admin tokens' rows are locked first (each revocation's check would otherwise see
        // the other's token still live, and both would commit).
        let mut tx = self.db.write().await?;
        if D::NAME == "postgres" {
            tx.fetch_all(
                "SELECT id FROM api_tokens WHERE scope = 'admin' AND revoked_at IS NULL \
                 FOR UPDATE",
                &[],
            )
            .await?;
        }
        let changed = tx
            .execute(
                "UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL \
                 AND (scope <> 'admin' OR (SELECT COUNT(*) FROM api_tokens AS other \
                      WHERE other.id <> $1 AND other.revoked_at IS NULL \
                      AND other.scope = 'admin' AND other.expires_at IS NULL) > 0)",
                &args![id, super::codec::to_stored_precision(at)?],
            )
            .await?;
        tx.commit().await?;
        if changed > 0 {
            return Ok(Revocation::Revoked);
        }
        Ok(match self.get_api_token(id).await? {
            None => Revocation::NotFound,
            Some(t) if t.revoked_at.is_some() => Revocation::Revoked,
            Some(_) => Revocation::LastToken,
        })
    }
}

#[cfg(test)]
mod tests;
