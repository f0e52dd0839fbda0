//! SQLite `NodeStore`: the embedded default, one database file in the data directory (WAL
//! journal, 5 s busy timeout, file mode 0600). Redemption runs in a `BEGIN IMMEDIATE`
//! transaction, so concurrent redemptions queue on the write lock instead of failing.
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use time::OffsetDateTime;

use super::claims::claim_for_node_sqlite;
use super::codec::{
    addresses_json, decode_progress, format_optional, format_timestamp, is_unique_violation,
    kinds_json, node_insert_outcome, read_node, read_token, to_stored_precision,
};
use super::records::explain_failed_update;
use super::{JoinTokenRecord, NewNode, NodeStore, RedeemError, StoreError};
use crate::domain::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, Node, NodeId, NodeName,
};

/// The migration bookkeeping table: not sqlx's default name, so the provisioner can share a
/// database with another service's migrations without their versions colliding.
pub(crate) const MIGRATIONS_TABLE: &str = "_levelrail_provisioner_migrations";

/// A `join_tokens` query reading every column `read_token` decodes.
macro_rules! select_tokens {
    ($tail:literal) => {
        concat!(
            "SELECT id, secret_sha256, node_name, provision_id, role, created_at, expires_at, ",
            "used_at, used_by_node, revoked_at FROM join_tokens ",
            $tail
        )
    };
}

/// A `nodes` query reading every column `read_node` decodes.
macro_rules! select_nodes {
    ($tail:literal) => {
        concat!(
            "SELECT id, name, addresses, agent_version, docker_version, workload_kinds, provision_id, ",
            "enrolled_at, last_seen_at, cert_serial, cert_fingerprint FROM nodes ",
            $tail
        )
    };
}

/// A `NodeStore` in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
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
            .busy_timeout(Duration::from_secs(5));
        let in_memory = dsn.contains(":memory:") || dsn.contains("mode=memory");
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
        let mut migrator = sqlx::migrate!("./migrations/sqlite");
        migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
        migrator
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        Ok(SqliteStore { pool })
    }
}

/// Creates the database file with mode 0600 before SQLite does (which would use 0644).
async fn create_private_file(path: &Path) {
    let mut open = tokio::fs::OpenOptions::new();
    open.write(true).create_new(true).mode(0o600);
    // Failures other than "exists" resurface, with context, when SQLite opens the file.
    let _ = open.open(path).await;
}

/// Tightens the database file and its WAL/shared-memory files to mode 0600.
async fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        match tokio::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).await {
            Ok(()) => {}
            // Side files appear later and then copy the main file's mode.
            Err(e) if !suffix.is_empty() && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not restrict the node database to mode 0600")
            }
        }
    }
}

/// Inserts the node of a redemption inside its transaction (`enrolled_at = last_seen_at =
/// now`). On error the caller drops the transaction, which rolls the token update back.
async fn insert_node(
    conn: &mut sqlx::SqliteConnection,
    node_name: &NodeName,
    n: &NewNode,
    now: &str,
) -> Result<(), RedeemError> {
    let result = sqlx::query(
        "INSERT INTO nodes (id, name, addresses, agent_version, workload_kinds, provision_id, \
             enrolled_at, last_seen_at, cert_serial, cert_fingerprint, certificate_pem) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10)",
    )
    .bind(n.id.as_str())
    .bind(node_name.as_str())
    .bind(addresses_json(&n.addresses))
    .bind(&n.agent_version)
    .bind(kinds_json(&n.workload_kinds))
    .bind(n.provision_id.as_deref())
    .bind(now)
    .bind(&n.cert_serial)
    .bind(&n.cert_fingerprint)
    .bind(&n.certificate_pem)
    .execute(conn)
    .await;
    node_insert_outcome(result)
}

#[async_trait]
impl NodeStore for SqliteStore {
    async fn create_join_token(&self, t: &JoinTokenRecord) -> Result<(), StoreError> {
        let done = sqlx::query(
            "INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
             created_at, expires_at, used_at, used_by_node, revoked_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(t.id.as_str())
        .bind(t.secret_sha256.to_vec())
        .bind(t.node_name.as_ref().map(|n| n.as_str().to_owned()))
        .bind(t.provision_id.clone())
        .bind(t.role.as_str())
        .bind(format_timestamp(t.created_at)?)
        .bind(format_timestamp(t.expires_at)?)
        .bind(format_optional(t.used_at)?)
        .bind(t.used_by_node.as_ref().map(|n| n.as_str().to_owned()))
        .bind(format_optional(t.revoked_at)?)
        .execute(&self.pool)
        .await;
        match done {
            Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate("join_tokens")),
            other => other.map(drop).map_err(StoreError::from),
        }
    }

    async fn get_join_token(
        &self,
        id: &JoinTokenId,
    ) -> Result<Option<JoinTokenRecord>, StoreError> {
        let row = sqlx::query(select_tokens!("WHERE id = ?"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_token).transpose()
    }

    async fn list_join_tokens(&self) -> Result<Vec<JoinTokenRecord>, StoreError> {
        let rows = sqlx::query(select_tokens!("ORDER BY id"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(read_token).collect()
    }

    async fn revoke_join_token(
        &self,
        id: &JoinTokenId,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, ?) \
             WHERE id = ? AND used_at IS NULL",
        )
        .bind(format_timestamp(now)?)
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
        now: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE join_tokens SET revoked_at = ? \
             WHERE provision_id = ? AND used_at IS NULL AND revoked_at IS NULL",
        )
        .bind(format_timestamp(now)?)
        .bind(provision_id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn redeem_join_token(
        &self,
        id: &JoinTokenId,
        secret_sha256: &[u8; 32],
        node_name: &NodeName,
        now: OffsetDateTime,
        new_node: &NewNode,
    ) -> Result<Node, RedeemError> {
        let now = to_stored_precision(now)?;
        // Check the secret (in constant time, in Rust) and the token's state without taking
        // the write lock; the conditional update below re-checks the state atomically.
        let row = self.get_join_token(id).await?.ok_or(RedeemError::Unknown)?;
        if let Some(reason) = row.rejection(secret_sha256, Some(node_name), now) {
            return Err(reason);
        }
        let now_text = format_timestamp(now)?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let updated = sqlx::query(
            "UPDATE join_tokens SET used_at = ?1, used_by_node = ?2 \
             WHERE id = ?3 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?1 \
             AND (node_name IS NULL OR node_name = ?4)",
        )
        .bind(&now_text)
        .bind(new_node.id.as_str())
        .bind(id.as_str())
        .bind(node_name.as_str())
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            tx.rollback().await?;
            let row = self.get_join_token(id).await?;
            return Err(explain_failed_update(
                row.as_ref(),
                secret_sha256,
                node_name,
                now,
            ));
        }
        insert_node(&mut tx, node_name, new_node, &now_text).await?;
        claim_for_node_sqlite(
            &mut tx,
            node_name,
            &new_node.id,
            new_node.provision_id.as_deref(),
        )
        .await?;
        tx.commit().await?;
        Ok(new_node.enrolled(node_name, now))
    }

    async fn get_node(&self, id: &NodeId) -> Result<Option<Node>, StoreError> {
        let row = sqlx::query(select_nodes!("WHERE id = ?"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_node).transpose()
    }

    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT certificate_pem FROM nodes WHERE id = ?")
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|(pem,)| pem))
    }

    async fn list_nodes(&self) -> Result<Vec<Node>, StoreError> {
        let rows = sqlx::query(select_nodes!("ORDER BY name"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(read_node).collect()
    }

    async fn delete_node(&self, id: &NodeId) -> Result<bool, StoreError> {
        // The node's name claim goes with it, in the same transaction.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let done = sqlx::query("DELETE FROM nodes WHERE id = ?")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM name_claims WHERE holder_kind = 'node' AND holder_id = ?")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn touch_node(
        &self,
        id: &NodeId,
        now: OffsetDateTime,
        report: &HeartbeatReport,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE nodes SET last_seen_at = ?, addresses = ?, agent_version = ?, \
             docker_version = ? WHERE id = ?",
        )
        .bind(format_timestamp(now)?)
        .bind(addresses_json(&report.addresses))
        .bind(&report.agent_version)
        .bind(&report.docker_version)
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn record_install_progress(
        &self,
        provision_id: &str,
        step: InstallStep,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO install_progress (provision_id, step, reported_at, error) \
             VALUES (?, ?, ?, ?) ON CONFLICT (provision_id, step) DO NOTHING",
        )
        .bind(provision_id)
        .bind(step.as_str())
        .bind(format_timestamp(now)?)
        .bind(error)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn list_install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, StoreError> {
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
            "SELECT step, reported_at, error FROM install_progress WHERE provision_id = ?",
        )
        .bind(provision_id)
        .fetch_all(&self.pool)
        .await?;
        decode_progress(rows)
    }
}

#[cfg(test)]
mod tests;
