//! `ProvisionStore` for PostgreSQL. Each write is one transaction; the `name_claims` primary
//! key and the conditional `UPDATE`s (row locks, re-checked after a concurrent commit) make
//! exactly one of several replicas win a name, a generation or a lease.
use async_trait::async_trait;
use sqlx::Row as _;
use time::OffsetDateTime;

use super::codec::{
    Encoded, bind_all_columns, bind_update_columns, claim_holder, is_request_conflict,
    provision_columns, read_provision,
};
use super::{
    ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord, ProvisionStore,
    replayed_or_taken,
};
use crate::domain::NodeName;
use crate::domain::provision::{ProvisionId, ProvisionStatus};
use crate::store::claims::is_claim_conflict;
use crate::store::codec::{format_timestamp, is_unique_violation};
use crate::store::{PostgresStore, StoreError};

/// A TIMESTAMPTZ column as the RFC 3339 text the codec parses.
macro_rules! utc_text {
    ($column:literal) => {
        concat!(
            "to_char(",
            $column,
            " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        )
    };
}

macro_rules! select_provisions {
    ($tail:literal) => {
        concat!(
            "SELECT ",
            provision_columns!(),
            ", ",
            utc_text!("lease_until"),
            " AS lease_until, ",
            utc_text!("created_at"),
            " AS created_at, ",
            utc_text!("updated_at"),
            " AS updated_at FROM provisions ",
            $tail
        )
    };
}

const INSERT: &str = concat!(
    "INSERT INTO provisions (",
    provision_columns!(),
    ", lease_until, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30::timestamptz, $31::timestamptz, $32::timestamptz)"
);

const UPDATE: &str = concat!(
    "UPDATE provisions SET status = $1, install_step = $2, ip_address = $3, node_id = $4, \
     failed_phase = $5, failure_reason = $6, provider_error_code = $7, \
     provider_server_id = $8, join_token_id = $9, sealed_join_token = $10, \
     cancel_requested = $11, saga_step = $12, saga = $13, stages = $14, generation = $15, \
     updated_at = $16::timestamptz, \
     lease_owner = CASE WHEN $17 THEN NULL ELSE lease_owner END, \
     lease_until = CASE WHEN $17 THEN NULL ELSE lease_until END \
     WHERE id = $18 AND generation = $19 RETURNING lease_owner, ",
    utc_text!("lease_until"),
    " AS lease_until"
);

#[async_trait]
impl ProvisionStore for PostgresStore {
    async fn insert_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<ProvisionRecord, InsertProvisionError> {
        let stored = record.stored()?;
        let enc = Encoded::of(&stored)?;
        let mut tx = self.pool.begin().await?;
        let claim = sqlx::query(
            "INSERT INTO name_claims (name, holder_kind, holder_id) VALUES ($1, 'provision', $2)",
        )
        .bind(stored.name.as_str())
        .bind(stored.id.as_str())
        .execute(&mut *tx)
        .await;
        match claim {
            Err(e) if is_claim_conflict(&e) => {}
            Err(e) => return Err(e.into()),
            Ok(_) => match bind_all_columns!(sqlx::query(INSERT), stored, enc)
                .execute(&mut *tx)
                .await
            {
                Ok(_) => {
                    tx.commit().await?;
                    return Ok(stored);
                }
                Err(e) if is_request_conflict(&e) => {}
                Err(e) if is_unique_violation(&e) => {
                    return Err(StoreError::Duplicate("provisions").into());
                }
                Err(e) => return Err(e.into()),
            },
        }
        tx.rollback().await?;
        Err(replayed_or_taken(self, record).await)
    }

    async fn get_provision(&self, id: &ProvisionId) -> Result<Option<ProvisionRecord>, StoreError> {
        let row = sqlx::query(select_provisions!("WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_provision).transpose()
    }

    async fn get_provision_by_request(
        &self,
        request_id: &str,
    ) -> Result<Option<ProvisionRecord>, StoreError> {
        let row = sqlx::query(select_provisions!("WHERE request_id = $1"))
            .bind(request_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read_provision).transpose()
    }

    async fn list_provisions(
        &self,
        limit: u32,
        after: Option<&PageCursor>,
    ) -> Result<Vec<ProvisionRecord>, StoreError> {
        let rows = match after {
            None => {
                sqlx::query(select_provisions!(
                    "ORDER BY created_at DESC, id DESC LIMIT $1"
                ))
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
            }
            Some(c) => {
                sqlx::query(select_provisions!(
                    "WHERE created_at < $1::timestamptz \
                     OR (created_at = $1::timestamptz AND id < $2) \
                     ORDER BY created_at DESC, id DESC LIMIT $3"
                ))
                .bind(format_timestamp(c.created_at)?)
                .bind(c.id.as_str())
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
            }
        };
        rows.iter().map(read_provision).collect()
    }

    async fn update_provision(
        &self,
        record: &ProvisionRecord,
    ) -> Result<Option<ProvisionRecord>, StoreError> {
        let mut next = record.next_version()?;
        let enc = Encoded::of(&next)?;
        let mut tx = self.pool.begin().await?;
        let row = bind_update_columns!(sqlx::query(UPDATE), next, enc)
            .bind(next.id.as_str())
            .bind(enc.generation - 1)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        next.lease_owner = row.try_get("lease_owner")?;
        let until: Option<String> = row.try_get("lease_until")?;
        next.lease_until = until.map(|t| parse_time(&t)).transpose()?;
        if next.status == ProvisionStatus::Failed {
            sqlx::query(
                "DELETE FROM name_claims WHERE name = $1 AND holder_kind = 'provision' \
                 AND holder_id = $2",
            )
            .bind(next.name.as_str())
            .bind(next.id.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Some(next))
    }

    async fn acquire_lease(
        &self,
        id: &ProvisionId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE provisions SET lease_owner = $1, lease_until = $2::timestamptz \
             WHERE id = $3 AND status NOT IN ('ready', 'failed') \
             AND (lease_owner IS NULL OR lease_until IS NULL \
                  OR lease_until < $4::timestamptz OR lease_owner = $1)",
        )
        .bind(owner)
        .bind(format_timestamp(until)?)
        .bind(id.as_str())
        .bind(format_timestamp(now)?)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_lease(&self, id: &ProvisionId, owner: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE provisions SET lease_owner = NULL, lease_until = NULL \
             WHERE id = $1 AND lease_owner = $2",
        )
        .bind(id.as_str())
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn list_resumable(&self, now: OffsetDateTime) -> Result<Vec<ProvisionId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM provisions WHERE status NOT IN ('ready', 'failed') \
             AND (lease_owner IS NULL OR lease_until IS NULL OR lease_until < $1::timestamptz) \
             ORDER BY created_at",
        )
        .bind(format_timestamp(now)?)
        .fetch_all(&self.pool)
        .await?;
        ids.iter()
            .map(|id| {
                ProvisionId::parse(id)
                    .map_err(|_| StoreError::Corrupt("provisions.id holds an invalid value".into()))
            })
            .collect()
    }

    async fn name_claim(&self, name: &NodeName) -> Result<Option<ClaimHolder>, StoreError> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT holder_kind, holder_id FROM name_claims WHERE name = $1")
                .bind(name.as_str())
                .fetch_optional(&self.pool)
                .await?;
        row.map(|(kind, id)| claim_holder(&kind, &id)).transpose()
    }
}

fn parse_time(text: &str) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|_| StoreError::Corrupt("provisions.lease_until holds an invalid value".into()))
}

#[cfg(test)]
mod tests;
