//! PostgreSQL `NodeStore`: the engine for several control-plane replicas. Redemption is one
//! transaction whose conditional `UPDATE` takes the token's row lock, so concurrent
//! redemptions on any replica serialise on that row and exactly one matches.
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection as _, Executor as _};
use time::OffsetDateTime;

use super::claims::claim_for_node_postgres;
use super::codec::{
    addresses_json, decode_progress, format_optional, format_timestamp, is_unique_violation,
    kinds_json, node_insert_outcome, read_node, read_token, to_stored_precision,
};
use super::records::explain_failed_update;
use super::sqlite::MIGRATIONS_TABLE;
use super::{JoinTokenRecord, NewNode, NodeStore, RedeemError, StoreError};
use crate::domain::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, Node, NodeId, NodeName,
};

/// Reads a TIMESTAMPTZ column as the RFC 3339 text the shared codec parses.
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

/// A `join_tokens` query reading every column `read_token` decodes.
macro_rules! select_tokens {
    ($tail:literal) => {
        concat!(
            "SELECT id, secret_sha256, node_name, provision_id, role, ",
            utc_text!("created_at"),
            ", ",
            utc_text!("expires_at"),
            ", ",
            utc_text!("used_at"),
            ", used_by_node, ",
            utc_text!("revoked_at"),
            " FROM join_tokens ",
            $tail
        )
    };
}

/// A `nodes` query reading every column `read_node` decodes.
macro_rules! select_nodes {
    ($tail:literal) => {
        concat!(
            "SELECT id, name, addresses, agent_version, docker_version, workload_kinds, provision_id, ",
            utc_text!("enrolled_at"),
            ", ",
            utc_text!("last_seen_at"),
            ", cert_serial, cert_fingerprint FROM nodes ",
            $tail
        )
    };
}

/// Prefix of the throw-away schemas made by `connect_isolated_for_tests`.
const TEST_SCHEMA_PREFIX: &str = "lr_prov_test_";

/// A `NodeStore` in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(crate) pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database named by `dsn` (`postgres://…` or `postgresql://…`) and
    /// applies pending migrations (serialised between replicas by sqlx's advisory lock).
    /// Errors never contain the DSN.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(dsn, None).await
    }

    /// Test support: creates a fresh schema `lr_prov_test_<uuid>`, connects with every
    /// pooled connection's `search_path` set to it, and migrates it, so parallel tests
    /// sharing one database never collide. Returns the store and the schema name.
    #[doc(hidden)]
    pub async fn connect_isolated_for_tests(dsn: &str) -> Result<(Self, String), StoreError> {
        let schema = format!("{TEST_SCHEMA_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(dsn).await?;
        // Safe to splice: a fixed prefix and a hex UUID.
        admin
            .execute(sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE SCHEMA \"{schema}\""
            ))))
            .await?;
        admin.close().await?;
        let store = Self::connect_in_schema(dsn, Some(&schema)).await?;
        Ok((store, schema))
    }

    /// Test support: drops a schema made by `connect_isolated_for_tests` and closes the
    /// pool. Refuses names that do not look like one.
    #[doc(hidden)]
    pub async fn drop_isolated_schema_for_tests(&self, schema: &str) -> Result<(), StoreError> {
        let suffix = schema.strip_prefix(TEST_SCHEMA_PREFIX).unwrap_or("");
        if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::Corrupt("not an isolated test schema".into()));
        }
        let drop = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
        sqlx::raw_sql(AssertSqlSafe(drop))
            .execute(&self.pool)
            .await?;
        self.pool.close().await;
        Ok(())
    }

    /// The pool, for backend-specific tests.
    #[cfg(test)]
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
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
        let mut migrator = sqlx::migrate!("./migrations/postgres");
        migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
        migrator
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        Ok(PostgresStore { pool })
    }
}

/// Inserts the node of a redemption inside its transaction (`enrolled_at = last_seen_at =
/// now`). On error the caller drops the transaction, which rolls the token update back.
async fn insert_node(
    conn: &mut sqlx::PgConnection,
    node_name: &NodeName,
    n: &NewNode,
    now: &str,
) -> Result<(), RedeemError> {
    let result = sqlx::query(
        "INSERT INTO nodes (id, name, addresses, agent_version, workload_kinds, provision_id, \
             enrolled_at, last_seen_at, cert_serial, cert_fingerprint, certificate_pem) \
             VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $7::timestamptz, $8, $9, $10)",
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
impl NodeStore for PostgresStore {
    async fn create_join_token(&self, t: &JoinTokenRecord) -> Result<(), StoreError> {
        let done = sqlx::query(
            "INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
             created_at, expires_at, used_at, used_by_node, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $8::timestamptz, \
             $9, $10::timestamptz)",
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
        let row = sqlx::query(select_tokens!("WHERE id = $1"))
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
            "UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, $1::timestamptz) \
             WHERE id = $2 AND used_at IS NULL",
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
            "UPDATE join_tokens SET revoked_at = $1::timestamptz \
             WHERE provision_id = $2 AND used_at IS NULL AND revoked_at IS NULL",
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
        // The secret is checked in Rust, in constant time; the update re-checks the state.
        let row = self.get_join_token(id).await?.ok_or(RedeemError::Unknown)?;
        if let Some(reason) = row.rejection(secret_sha256, Some(node_name), now) {
            return Err(reason);
        }
        let now_text = format_timestamp(now)?;
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "UPDATE join_tokens SET used_at = $1::timestamptz, used_by_node = $2 \
             WHERE id = $3 AND used_at IS NULL AND revoked_at IS NULL \
             AND expires_at > $1::timestamptz AND (node_name IS NULL OR node_name = $4)",
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
        claim_for_node_postgres(
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
        let row = sqlx::query(select_nodes!("WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_node).transpose()
    }

    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT certificate_pem FROM nodes WHERE id = $1")
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
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("DELETE FROM nodes WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM name_claims WHERE holder_kind = 'node' AND holder_id = $1")
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
            "UPDATE nodes SET last_seen_at = $1::timestamptz, addresses = $2, agent_version = $3, \
             docker_version = $4 WHERE id = $5",
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
             VALUES ($1, $2, $3::timestamptz, $4) ON CONFLICT (provision_id, step) DO NOTHING",
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
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(concat!(
            "SELECT step, ",
            utc_text!("reported_at"),
            ", error FROM install_progress WHERE provision_id = $1"
        ))
        .bind(provision_id)
        .fetch_all(&self.pool)
        .await?;
        decode_progress(rows)
    }
}

#[cfg(test)]
mod tests;
