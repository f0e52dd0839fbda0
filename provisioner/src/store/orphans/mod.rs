//! Persistence of orphaned servers.
//!
//! One trait ([`OrphanStore`]) implemented by the same three backends as the node store
//! (memory, SQLite, PostgreSQL) and one conformance suite (`conformance::run`).
//!
//! Invariants every backend keeps:
//! - one row per server: `(provider, server key)` is unique, the key being the server id or,
//!   without one, the provision id; recording a known server again returns its row (moved
//!   back to `pending` when it was `deleted`, since the server showed up again);
//! - `adopted` and `deleted` are left only by a new sighting (`deleted` → `pending`);
//! - an attempt is counted only while the orphan is in the state its caller saw.
use std::fmt::Debug;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Row, Type};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::StoreError;
use super::codec::col;
use crate::domain::{Orphan, OrphanId, OrphanReason, OrphanState};
use crate::providers::ProviderId;

/// The orphan half of the provisioner's storage.
#[async_trait]
pub trait OrphanStore: Send + Sync + Debug {
    /// Records `orphan`, or, when its server is already recorded, returns that row
    /// (back to `pending` if it was `deleted`). `first_seen`, `attempts` and the id of an
    /// existing row are kept.
    async fn record_orphan(&self, orphan: &Orphan) -> Result<Orphan, StoreError>;
    /// An orphan by id.
    async fn get_orphan(&self, id: &OrphanId) -> Result<Option<Orphan>, StoreError>;
    /// Every orphan, oldest first (by `first_seen`, then id).
    async fn list_orphans(&self) -> Result<Vec<Orphan>, StoreError>;
    /// Counts a deletion attempt of an orphan that is still in state `seen`: with no
    /// `error` it becomes `deleted`, otherwise `error` becomes its last error. `None` when
    /// the orphan is gone or has left `seen`.
    async fn record_orphan_attempt(
        &self,
        id: &OrphanId,
        seen: OrphanState,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<Option<Orphan>, StoreError>;
    /// Moves a `pending` orphan to `adopted`. `None` when it is gone or not pending.
    async fn adopt_orphan(
        &self,
        id: &OrphanId,
        now: OffsetDateTime,
    ) -> Result<Option<Orphan>, StoreError>;
}

/// The columns every orphan query selects, in `read_orphan`'s terms (timestamps follow).
macro_rules! orphan_columns {
    () => {
        "id, provider, server_id, provision_id, node_name, region, reason, attempts, \
         last_error, state"
    };
}

/// The SQL backends' `OrphanStore`: every write is one statement, so each backend only
/// names its statements (`record`, `get`, `list`, `attempt`, `adopt`; the bind order is
/// fixed here) and the timestamp text form.
macro_rules! sql_orphan_store {
    ($store:ty, $record:expr, $get:expr, $list:expr, $attempt:expr, $adopt:expr) => {
        #[async_trait::async_trait]
        impl $crate::store::OrphanStore for $store {
            async fn record_orphan(
                &self,
                o: &$crate::domain::Orphan,
            ) -> Result<$crate::domain::Orphan, $crate::store::StoreError> {
                use $crate::store::codec::{format_timestamp, is_unique_violation};
                let row = sqlx::query($record)
                    .bind(o.id.as_str())
                    .bind(o.provider.as_str())
                    .bind(o.server_id.as_deref())
                    .bind(&o.provision_id)
                    .bind(&o.node_name)
                    .bind(&o.region)
                    .bind(o.reason.as_str())
                    .bind(i64::from(o.attempts))
                    .bind(o.last_error.as_deref())
                    .bind(o.state.as_str())
                    .bind(format_timestamp(o.first_seen)?)
                    .bind(format_timestamp(o.updated_at)?)
                    .bind(o.server_key())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| {
                        if is_unique_violation(&e) {
                            $crate::store::StoreError::Duplicate("orphans")
                        } else {
                            e.into()
                        }
                    })?;
                super::read_orphan(&row)
            }

            async fn get_orphan(
                &self,
                id: &$crate::domain::OrphanId,
            ) -> Result<Option<$crate::domain::Orphan>, $crate::store::StoreError> {
                let row = sqlx::query($get)
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(super::read_orphan).transpose()
            }

            async fn list_orphans(
                &self,
            ) -> Result<Vec<$crate::domain::Orphan>, $crate::store::StoreError> {
                let rows = sqlx::query($list).fetch_all(&self.pool).await?;
                rows.iter().map(super::read_orphan).collect()
            }

            async fn record_orphan_attempt(
                &self,
                id: &$crate::domain::OrphanId,
                seen: $crate::domain::OrphanState,
                now: time::OffsetDateTime,
                error: Option<&str>,
            ) -> Result<Option<$crate::domain::Orphan>, $crate::store::StoreError> {
                let row = sqlx::query($attempt)
                    .bind(error)
                    .bind($crate::store::codec::format_timestamp(now)?)
                    .bind(id.as_str())
                    .bind(seen.as_str())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(super::read_orphan).transpose()
            }

            async fn adopt_orphan(
                &self,
                id: &$crate::domain::OrphanId,
                now: time::OffsetDateTime,
            ) -> Result<Option<$crate::domain::Orphan>, $crate::store::StoreError> {
                let row = sqlx::query($adopt)
                    .bind($crate::store::codec::format_timestamp(now)?)
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(super::read_orphan).transpose()
            }
        }
    };
}

pub mod conformance;
mod memory;
mod postgres;
mod sqlite;

fn corrupt(column: &str) -> StoreError {
    StoreError::Corrupt(format!("orphans.{column} holds an invalid value"))
}

/// Decodes an `orphans` row (timestamps as RFC 3339 text).
fn read_orphan<R>(row: &R) -> Result<Orphan, StoreError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let text = |name: &str| col::<_, String>(row, name);
    let time = |name: &str| -> Result<OffsetDateTime, StoreError> {
        OffsetDateTime::parse(&text(name)?, &Rfc3339).map_err(|_| corrupt(name))
    };
    let provider = text("provider")?;
    Ok(Orphan {
        id: OrphanId::parse(&text("id")?).map_err(|_| corrupt("id"))?,
        provider: ProviderId::ALL
            .into_iter()
            .find(|p| p.as_str() == provider)
            .ok_or_else(|| corrupt("provider"))?,
        server_id: col(row, "server_id")?,
        provision_id: text("provision_id")?,
        node_name: text("node_name")?,
        region: text("region")?,
        reason: OrphanReason::from_name(&text("reason")?).ok_or_else(|| corrupt("reason"))?,
        first_seen: time("first_seen")?,
        attempts: u32::try_from(col::<_, i64>(row, "attempts")?)
            .map_err(|_| corrupt("attempts"))?,
        last_error: col(row, "last_error")?,
        state: OrphanState::from_name(&text("state")?).ok_or_else(|| corrupt("state"))?,
        updated_at: time("updated_at")?,
    })
}
