//! `OrphanStore` in SQL: each write is one statement, atomic without an explicit
//! transaction.
use async_trait::async_trait;
use levelrail_db::{Dialect, Row, args};
use time::OffsetDateTime;

use crate::model::ports::OrphanStore;
use crate::model::ports::StoreError;
use crate::model::{Orphan, OrphanId, OrphanReason, OrphanState};
use crate::store::SqlStore;
use levelrail_types::ProviderId;

/// Every column `read_orphan` decodes.
macro_rules! orphan_columns {
    () => {
        "id, provider, server_id, provision_id, node_name, region, reason, attempts, \
         last_error, state, first_seen, updated_at"
    };
}

const RECORD: &str = concat!(
    "INSERT INTO orphans (",
    orphan_columns!(),
    ", server_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
     ON CONFLICT (provider, server_key) DO UPDATE SET \
     state = CASE WHEN orphans.state = 'deleted' THEN 'pending' ELSE orphans.state END, \
     updated_at = CASE WHEN orphans.state = 'deleted' THEN excluded.updated_at \
     ELSE orphans.updated_at END RETURNING ",
    orphan_columns!()
);

const ATTEMPT: &str = concat!(
    "UPDATE orphans SET attempts = attempts + 1, \
     state = CASE WHEN CAST($1 AS TEXT) IS NULL THEN 'deleted' ELSE state END, \
     last_error = COALESCE(CAST($1 AS TEXT), last_error), updated_at = $2 \
     WHERE id = $3 AND state = $4 RETURNING ",
    orphan_columns!()
);

const ADOPT: &str = concat!(
    "UPDATE orphans SET state = 'adopted', updated_at = $1 \
     WHERE id = $2 AND state = 'pending' RETURNING ",
    orphan_columns!()
);

const GET: &str = concat!("SELECT ", orphan_columns!(), " FROM orphans WHERE id = $1");

const LIST: &str = concat!(
    "SELECT ",
    orphan_columns!(),
    " FROM orphans ORDER BY first_seen, id"
);

#[async_trait]
impl<D: Dialect> OrphanStore for SqlStore<D> {
    async fn record_orphan(&self, o: &Orphan) -> Result<Orphan, StoreError> {
        let row = self
            .db
            .fetch_optional(
                RECORD,
                &args![
                    o.id.as_str(),
                    o.provider.as_str(),
                    o.server_id.as_deref(),
                    &o.provision_id,
                    &o.node_name,
                    &o.region,
                    o.reason.as_str(),
                    i64::from(o.attempts),
                    o.last_error.as_deref(),
                    o.state.as_str(),
                    o.first_seen,
                    o.updated_at,
                    o.server_key(),
                ],
            )
            .await
            .map_err(|e| match D::unique_violation(&e) {
                Some(_) => StoreError::Duplicate("orphans"),
                None => e.into(),
            })?
            .ok_or_else(|| StoreError::Corrupt("an upsert of orphans returned no row".into()))?;
        read_orphan(&row)
    }

    async fn get_orphan(&self, id: &OrphanId) -> Result<Option<Orphan>, StoreError> {
        let row = self.db.fetch_optional(GET, &args![id.as_str()]).await?;
        row.as_ref().map(read_orphan).transpose()
    }

    async fn list_orphans(&self) -> Result<Vec<Orphan>, StoreError> {
        let rows = self.db.fetch_all(LIST, &[]).await?;
        rows.iter().map(read_orphan).collect()
    }

    async fn record_orphan_attempt(
        &self,
        id: &OrphanId,
        seen: OrphanState,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<Option<Orphan>, StoreError> {
        let row = self
            .db
            .fetch_optional(ATTEMPT, &args![error, now, id.as_str(), seen.as_str()])
            .await?;
        row.as_ref().map(read_orphan).transpose()
    }

    async fn adopt_orphan(
        &self,
        id: &OrphanId,
        now: OffsetDateTime,
    ) -> Result<Option<Orphan>, StoreError> {
        let row = self
            .db
            .fetch_optional(ADOPT, &args![now, id.as_str()])
            .await?;
        row.as_ref().map(read_orphan).transpose()
    }
}

fn corrupt(column: &str) -> StoreError {
    StoreError::Corrupt(format!("orphans.{column} holds an invalid value"))
}

fn read_orphan(row: &Row) -> Result<Orphan, StoreError> {
    Ok(Orphan {
        id: OrphanId::parse(&row.text("id")?).map_err(|_| corrupt("id"))?,
        provider: row
            .text("provider")?
            .parse::<ProviderId>()
            .map_err(|_| corrupt("provider"))?,
        server_id: row.opt_text("server_id")?,
        provision_id: row.text("provision_id")?,
        node_name: row.text("node_name")?,
        region: row.text("region")?,
        reason: OrphanReason::from_name(&row.text("reason")?).ok_or_else(|| corrupt("reason"))?,
        first_seen: row.time("first_seen")?,
        attempts: u32::try_from(row.int("attempts")?).map_err(|_| corrupt("attempts"))?,
        last_error: row.opt_text("last_error")?,
        state: OrphanState::from_name(&row.text("state")?).ok_or_else(|| corrupt("state"))?,
        updated_at: row.time("updated_at")?,
    })
}

#[cfg(test)]
mod tests;
