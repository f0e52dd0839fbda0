//! `ProvisionStore` in SQL. Writes that touch a claim run in write transactions
//! (`BEGIN IMMEDIATE` on SQLite, row locks on PostgreSQL) or, for a provision inserted with
//! its token on PostgreSQL, in one statement, so concurrent requests on any replica queue,
//! and the `name_claims` primary key decides which of them gets a name.
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use levelrail_db::{Dialect, Value as Arg, args};
use time::OffsetDateTime;

use super::codec::{
    Encoded, claim_holder, is_request_conflict, lease_epoch, provision_columns, read_provision,
};
use super::replayed_or_taken;
use crate::model::ports::StoreError;
use crate::model::ports::{
    Change, ChangeFeed, PROVISIONS_PER_READ, ProvisionStore, SharedStateStore, WaitView,
};
use crate::model::provision::{ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord};
use crate::model::provision::{ProvisionId, ProvisionStatus};
use crate::model::{JoinTokenRecord, NodeId, NodeName};
use crate::store::SqlStore;
use crate::store::batch::{BatchStatement, Batched};
use crate::store::claims::is_claim_conflict;
use crate::store::codec::{corrupt, read_progress};
use crate::store::nodes::{INSERT_JOIN_TOKEN, join_token_args};

/// Provisions with their leases (`provision_leases` holds a row for each provision in
/// flight; none for a finished one).
macro_rules! provisions_with_leases {
    () => {
        concat!(
            "SELECT ",
            provision_columns!(),
            ", lease_owner, lease_until, created_at, updated_at FROM provisions \
             LEFT JOIN provision_leases ON provision_leases.provision_id = provisions.id "
        )
    };
}

macro_rules! select_provisions {
    ($tail:literal) => {
        concat!(provisions_with_leases!(), $tail)
    };
}

/// The provision (`$1`…`$31` of [`Encoded::all_columns`]), without its lease.
const INSERT: &str = concat!(
    "INSERT INTO provisions (",
    provision_columns!(),
    ", created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, $31)"
);

/// PostgreSQL: a lease asked for until `$until` from `$from` (the record's time), run
/// from the database's clock instead, which every replica compares leases at.
macro_rules! lease_on_database_clock {
    ($until:literal, $from:literal) => {
        concat!(
            "CASE WHEN ",
            $until,
            "::timestamptz IS NULL THEN NULL ELSE clock_timestamp() + (",
            $until,
            "::timestamptz - ",
            $from,
            "::timestamptz) END"
        )
    };
}

/// PostgreSQL: the name claim (`$44`), the provision (`$1`…`$31`), its lease (`$32`,
/// `$33`; none for a finished provision) and its join token (`$34`…`$43`) in one statement,
/// one round trip. A name already claimed claims nothing and so inserts nothing (`claimed`
/// is 0); a repeated request id fails the whole statement.
const INSERT_WITH_TOKEN_POSTGRES: &str = concat!(
    "WITH claim AS (INSERT INTO name_claims (name, holder_kind, holder_id) \
     VALUES ($44, 'provision', $1) ON CONFLICT (name) DO NOTHING RETURNING holder_id), \
     provision AS (INSERT INTO provisions (",
    provision_columns!(),
    ", created_at, updated_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, $31 FROM claim RETURNING id), \
     lease AS (INSERT INTO provision_leases (provision_id, lease_owner, lease_until) \
     SELECT $1, $32, ",
    lease_on_database_clock!("$33", "$31"),
    " FROM provision WHERE $7 NOT IN ('ready', 'failed') RETURNING lease_until), \
     token AS (INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
     created_at, expires_at, used_at, used_by_node, revoked_at) \
     SELECT $34, $35, $36, $37, $38, $39, $40, $41, $42, $43 FROM provision RETURNING id) \
     SELECT (SELECT count(*) FROM claim) AS claimed, \
     (SELECT lease_until FROM lease) AS lease_until"
);

/// After [`INSERT`], the lease of the provision in flight `$1`: held by `$2` until `$3`.
const INSERT_LEASE: &str = "INSERT INTO provision_leases (provision_id, lease_owner, lease_until) \
     VALUES ($1, $2, $3) RETURNING lease_until";

/// PostgreSQL: [`INSERT_LEASE`] until `$3` from `$4` (the record's time) on the database's
/// clock (see [`lease_on_database_clock`]).
const INSERT_LEASE_ON_DATABASE_CLOCK: &str = concat!(
    "INSERT INTO provision_leases (provision_id, lease_owner, lease_until) VALUES ($1, $2, ",
    lease_on_database_clock!("$3", "$4"),
    ") RETURNING lease_until"
);

/// SQLite: the same inserts as one batch of statements (one hand-off to the writer's
/// thread), committed with the other requests queued meanwhile (group commit); the first
/// to fail stops it, and its savepoint undoes what it did (see `levelrail_db`'s group
/// commit for how a batch of them fails).
const INSERT_WITH_TOKEN_SQLITE: &str = concat!(
    "SAVEPOINT grouped; \
     INSERT INTO name_claims (name, holder_kind, holder_id) VALUES ($44, 'provision', $1); \
     INSERT INTO provisions (",
    provision_columns!(),
    ", created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, $31); \
     INSERT INTO provision_leases (provision_id, lease_owner, lease_until) \
     SELECT $1, $32, $33 WHERE $7 NOT IN ('ready', 'failed'); \
     INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, created_at, \
     expires_at, used_at, used_by_node, revoked_at) \
     VALUES ($34, $35, $36, $37, $38, $39, $40, $41, $42, $43); \
     RELEASE grouped"
);

/// A provision with its install-progress reports (one row each; one row with NULLs when
/// there is none) and the node its join token enrolled: what a waiting driver reads, in
/// one round trip.
const WAIT_VIEW: &str = concat!(
    "SELECT p.*, \
     (SELECT nodes.id FROM join_tokens JOIN nodes ON nodes.id = join_tokens.used_by_node \
      WHERE join_tokens.id = p.join_token_id) AS enrolled_node, \
     install_progress.step AS step, install_progress.reported_at AS reported_at, \
     install_progress.error AS error FROM (",
    provisions_with_leases!(),
    "WHERE id = $1) AS p LEFT JOIN install_progress ON install_progress.provision_id = p.id"
);

/// [`PROVISIONS_PER_READ`] provisions by id.
const GET_MANY: &str = select_provisions!(
    "WHERE id IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)"
);

/// A change of the provision `$17`, conditional on the generation (`$18`) and lease epoch
/// (`$19`) it read; the answer has the lease as it stands.
const UPDATE: &str = "UPDATE provisions SET status = $1, install_step = $2, ip_address = $3, \
     node_id = $4, failed_phase = $5, failure_reason = $6, provider_error_code = $7, \
     provider_server_id = $8, join_token_id = $9, sealed_join_token = $10, \
     cancel_requested = $11, saga_step = $12, saga = $13, stages = $14, generation = $15, \
     updated_at = $16 WHERE id = $17 AND generation = $18 AND lease_epoch = $19 \
     RETURNING lease_epoch, \
     (SELECT lease_owner FROM provision_leases WHERE provision_id = provisions.id) AS lease_owner, \
     (SELECT lease_until FROM provision_leases WHERE provision_id = provisions.id) AS lease_until";

/// The provision in flight `$1`, and its fencing epoch; on PostgreSQL its row stays locked
/// until the transaction ends, so a lease is taken or released by one transaction at a time
/// and every write conditional on the epoch waits for it (the provision's row is always
/// locked before its lease row, never after).
const LOCK_IN_FLIGHT_POSTGRES: &str = "SELECT lease_epoch FROM provisions \
     WHERE id = $1 AND status NOT IN ('ready', 'failed') FOR UPDATE";
const LOCK_IN_FLIGHT_SQLITE: &str = "SELECT lease_epoch FROM provisions \
     WHERE id = $1 AND status NOT IN ('ready', 'failed')";

/// The lease of `$1`, locked on PostgreSQL until the transaction ends (after its
/// provision's row: see [`LOCK_IN_FLIGHT_POSTGRES`]), so a renewal cannot commit between
/// the read and the write that decides on it.
const LEASE_FOR_UPDATE_POSTGRES: &str =
    "SELECT lease_owner, lease_until FROM provision_leases WHERE provision_id = $1 FOR UPDATE";
const LEASE_FOR_UPDATE_SQLITE: &str =
    "SELECT lease_owner, lease_until FROM provision_leases WHERE provision_id = $1";

/// Renews `$2`'s live leases (at `$3`) on the provisions of the JSON array `$4` until `$1`:
/// only lease rows change (a finished provision has none), and each answer row carries the
/// provision's epoch.
macro_rules! renew_leases {
    ($ids:literal) => {
        concat!(
            "UPDATE provision_leases SET lease_until = $1 \
             WHERE lease_owner = $2 AND lease_until >= $3 AND provision_id IN (",
            $ids,
            ") RETURNING provision_id AS id, (SELECT lease_epoch FROM provisions \
             WHERE provisions.id = provision_leases.provision_id) AS lease_epoch"
        )
    };
}
const RENEW_LEASES_SQLITE: &str = renew_leases!("SELECT value FROM json_each($4)");
const RENEW_LEASES_POSTGRES: &str = renew_leases!("SELECT jsonb_array_elements_text($4::jsonb)");

/// A failed insert: a duplicate key names its table (a provision id, a token id); anything
/// else is the database's.
fn duplicate_or_unavailable<D: Dialect>(e: sqlx::Error) -> InsertProvisionError {
    match D::unique_violation(&e) {
        Some(v) if v.table == "join_tokens" => StoreError::Duplicate("join_tokens").into(),
        Some(_) => StoreError::Duplicate("provisions").into(),
        None => e.into(),
    }
}

#[async_trait]
impl<D: Dialect> ProvisionStore for SqlStore<D> {
    async fn insert_provision_with_token(
        &self,
        record: &ProvisionRecord,
        token: Option<&JoinTokenRecord>,
    ) -> Result<ProvisionRecord, InsertProvisionError> {
        let stored = record.stored()?;
        let enc = Encoded::of(&stored)?;
        if let Some(token) = token {
            // The one-request statements' arguments: the provision, its token, its name.
            let all = || {
                let mut all = enc.all_columns(&stored);
                all.extend(join_token_args(token));
                all.push(Arg::from(stored.name.as_str()));
                all
            };
            if D::NAME != "postgres" {
                return match self.db.write_grouped(INSERT_WITH_TOKEN_SQLITE, all()).await {
                    Ok(()) => Ok(stored),
                    Err(e) if is_claim_conflict::<D>(&e) || is_request_conflict::<D>(&e) => {
                        Err(replayed_or_taken(self, record).await)
                    }
                    Err(e) => Err(duplicate_or_unavailable::<D>(e)),
                };
            }
            let row = all();
            let batched = match STATEMENT.get_or_init(|| BatchStatement::new(&row, statement)) {
                Some(statement) => {
                    self.inserts
                        .insert(&self.db, statement, stored.id.to_string(), row)
                        .await
                }
                None => Batched::Alone,
            };
            match batched {
                Batched::Inserted(lease_until) => {
                    return Ok(ProvisionRecord {
                        lease_until,
                        ..stored
                    });
                }
                Batched::NotClaimed => return Err(replayed_or_taken(self, record).await),
                Batched::Failed(e) => return Err(e.into()),
                Batched::Alone => {}
            }
            return match self
                .db
                .fetch_optional(INSERT_WITH_TOKEN_POSTGRES, &all())
                .await
            {
                Ok(Some(row)) if row.int("claimed").map_err(StoreError::from)? == 1 => {
                    Ok(ProvisionRecord {
                        lease_until: row.opt_time("lease_until").map_err(StoreError::from)?,
                        ..stored
                    })
                }
                Ok(_) => Err(replayed_or_taken(self, record).await),
                Err(e) if is_request_conflict::<D>(&e) => {
                    Err(replayed_or_taken(self, record).await)
                }
                Err(e) => Err(duplicate_or_unavailable::<D>(e)),
            };
        }
        let mut tx = self.db.write().await?;
        let claim = tx
            .execute(
                "INSERT INTO name_claims (name, holder_kind, holder_id) \
                 VALUES ($1, 'provision', $2)",
                &args![stored.name.as_str(), stored.id.as_str()],
            )
            .await;
        match claim {
            Err(e) if is_claim_conflict::<D>(&e) => {}
            Err(e) => return Err(e.into()),
            Ok(_) => match tx.execute(INSERT, &enc.all_columns(&stored)[..31]).await {
                Ok(_) => {
                    let mut stored = stored;
                    if !stored.status.is_terminal() {
                        let (id, owner) = (stored.id.as_str(), stored.lease_owner.as_deref());
                        let row = if D::NOW.is_some() {
                            let lease = args![id, owner, stored.lease_until, stored.updated_at];
                            tx.fetch_optional(INSERT_LEASE_ON_DATABASE_CLOCK, &lease)
                                .await?
                        } else {
                            let lease = args![id, owner, stored.lease_until];
                            tx.fetch_optional(INSERT_LEASE, &lease).await?
                        };
                        stored.lease_until = match row {
                            Some(row) => row.opt_time("lease_until").map_err(StoreError::from)?,
                            None => None,
                        };
                    }
                    if let Some(token) = token {
                        tx.execute(INSERT_JOIN_TOKEN, &join_token_args(token))
                            .await
                            .map_err(duplicate_or_unavailable::<D>)?;
                    }
                    tx.commit().await?;
                    return Ok(stored);
                }
                Err(e) if is_request_conflict::<D>(&e) => {}
                Err(e) => return Err(duplicate_or_unavailable::<D>(e)),
            },
        }
        tx.rollback().await?;
        Err(replayed_or_taken(self, record).await)
    }

    async fn get_provision(&self, id: &ProvisionId) -> Result<Option<ProvisionRecord>, StoreError> {
        let row = self
            .db
            .fetch_optional(select_provisions!("WHERE id = $1"), &args![id.as_str()])
            .await?;
        row.as_ref().map(read_provision).transpose()
    }

    async fn wait_view(&self, id: &ProvisionId) -> Result<Option<WaitView>, StoreError> {
        let rows = self.db.fetch_all(WAIT_VIEW, &args![id.as_str()]).await?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let enrolled_node = first
            .opt_text("enrolled_node")?
            .map(|n| NodeId::parse(&n).map_err(|_| corrupt("nodes.id")))
            .transpose()?;
        // A provision without reports is one row whose report columns are NULL.
        let mut reported = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.opt_text("step")?.is_some() {
                reported.push(row);
            }
        }
        Ok(Some(WaitView {
            record: read_provision(first)?,
            progress: read_progress(reported)?,
            enrolled_node,
        }))
    }

    async fn get_provisions(
        &self,
        ids: &[ProvisionId],
    ) -> Result<Vec<ProvisionRecord>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(PROVISIONS_PER_READ) {
            // A fixed statement: the unused places hold an id no provision has.
            let mut args: Vec<Arg> = chunk.iter().map(|id| Arg::from(id.as_str())).collect();
            args.resize(PROVISIONS_PER_READ, Arg::from(""));
            let rows = self.db.fetch_all(GET_MANY, &args).await?;
            for row in &rows {
                found.push(read_provision(row)?);
            }
        }
        Ok(found)
    }

    async fn get_provision_by_request(
        &self,
        request_id: &str,
    ) -> Result<Option<ProvisionRecord>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                select_provisions!("WHERE request_id = $1"),
                &args![request_id],
            )
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
                self.db
                    .fetch_all(
                        select_provisions!("ORDER BY created_at DESC, id DESC LIMIT $1"),
                        &args![limit],
                    )
                    .await?
            }
            Some(c) => {
                self.db
                    .fetch_all(
                        select_provisions!(
                            "WHERE created_at < $1 OR (created_at = $1 AND id < $2) \
                             ORDER BY created_at DESC, id DESC LIMIT $3"
                        ),
                        &args![c.created_at, c.id.as_str(), limit],
                    )
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
        let columns = enc.update_columns(&next);
        // Only a finish also ends the lease (and a failure releases the name): every other
        // change is one statement, in a transaction of its own (one round trip).
        let row = if next.status.is_terminal() {
            let mut tx = self.db.write().await?;
            let row = tx.fetch_optional(UPDATE, &columns).await?;
            if row.is_some() {
                tx.execute(
                    "DELETE FROM provision_leases WHERE provision_id = $1",
                    &args![next.id.as_str()],
                )
                .await?;
            }
            if row.is_some() && next.status == ProvisionStatus::Failed {
                tx.execute(
                    "DELETE FROM name_claims WHERE name = $1 AND holder_kind = 'provision' \
                     AND holder_id = $2",
                    &args![next.name.as_str(), next.id.as_str()],
                )
                .await?;
            }
            tx.commit().await?;
            row
        } else {
            self.db.fetch_optional(UPDATE, &columns).await?
        };
        let Some(row) = row else {
            return Ok(None);
        };
        // Every change moves the generation: the replicas following the provision are told
        // (a cancel as one, for the replica driving it), now that it has committed.
        let kind = if next.cancel_requested {
            "cancel"
        } else {
            "change"
        };
        self.db
            .announce(CHANGES_CHANNEL, format!("{} {kind}", next.id));
        // A finished provision holds no lease (its row was deleted after the answer's read).
        let leased = !next.status.is_terminal();
        next.lease_owner = row.opt_text("lease_owner")?.filter(|_| leased);
        next.lease_until = row.opt_time("lease_until")?.filter(|_| leased);
        next.lease_epoch = lease_epoch(&row)?;
        // Immutable columns are as stored; the caller's record carries them unchanged.
        Ok(Some(next))
    }

    async fn acquire_lease(
        &self,
        id: &ProvisionId,
        owner: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Option<u64>, StoreError> {
        let mut tx = self.db.write().await?;
        let Some(provision) = tx
            .fetch_optional(
                in_dialect::<D>(LOCK_IN_FLIGHT_POSTGRES, LOCK_IN_FLIGHT_SQLITE),
                &args![id.as_str()],
            )
            .await?
        else {
            tx.rollback().await?;
            return Ok(None);
        };
        let lease_sql = in_dialect::<D>(LEASE_FOR_UPDATE_POSTGRES, LEASE_FOR_UPDATE_SQLITE);
        let lease = tx.fetch_optional(lease_sql, &args![id.as_str()]).await?;
        let (holder, until_now) = match &lease {
            Some(row) => (row.opt_text("lease_owner")?, row.opt_time("lease_until")?),
            None => (None, None),
        };
        let live = until_now.is_some_and(|t| t >= now);
        if live && holder.as_deref().is_some_and(|h| h != owner) {
            tx.rollback().await?;
            return Ok(None);
        }
        tx.execute(
            "INSERT INTO provision_leases (provision_id, lease_owner, lease_until) \
             VALUES ($1, $2, $3) ON CONFLICT (provision_id) DO UPDATE \
             SET lease_owner = excluded.lease_owner, lease_until = excluded.lease_until",
            &args![id.as_str(), owner, until],
        )
        .await?;
        // A renewal of a live lease keeps the epoch; anything else is a new holder.
        let epoch = if live && holder.as_deref() == Some(owner) {
            lease_epoch(&provision)?
        } else {
            let row = tx
                .fetch_optional(
                    "UPDATE provisions SET lease_epoch = lease_epoch + 1 WHERE id = $1 \
                     RETURNING lease_epoch",
                    &args![id.as_str()],
                )
                .await?
                .ok_or_else(|| StoreError::Corrupt("a locked provision vanished".into()))?;
            lease_epoch(&row)?
        };
        tx.commit().await?;
        Ok(Some(epoch))
    }

    async fn renew_leases(
        &self,
        owner: &str,
        ids: &[ProvisionId],
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<(ProvisionId, u64)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::to_string(&ids.iter().map(ProvisionId::as_str).collect::<Vec<_>>())
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let sql = in_dialect::<D>(RENEW_LEASES_POSTGRES, RENEW_LEASES_SQLITE);
        let rows = self
            .db
            .fetch_all(sql, &args![until, owner, now, list])
            .await?;
        rows.iter()
            .map(|row| {
                let id = ProvisionId::parse(&row.text("id")?)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok((id, lease_epoch(row)?))
            })
            .collect()
    }

    async fn release_lease(&self, id: &ProvisionId, owner: &str) -> Result<(), StoreError> {
        let mut tx = self.db.write().await?;
        if tx
            .fetch_optional(
                in_dialect::<D>(LOCK_IN_FLIGHT_POSTGRES, LOCK_IN_FLIGHT_SQLITE),
                &args![id.as_str()],
            )
            .await?
            .is_none()
        {
            return Ok(tx.rollback().await?);
        }
        let released = tx
            .execute(
                "UPDATE provision_leases SET lease_owner = NULL, lease_until = NULL \
                 WHERE provision_id = $1 AND lease_owner = $2",
                &args![id.as_str(), owner],
            )
            .await?;
        if released > 0 {
            tx.execute(
                "UPDATE provisions SET lease_epoch = lease_epoch + 1 WHERE id = $1",
                &args![id.as_str()],
            )
            .await?;
        }
        Ok(tx.commit().await?)
    }

    async fn database_time(&self) -> Result<Option<OffsetDateTime>, StoreError> {
        Ok(self.db.now().await?)
    }

    fn background(&self) -> Option<Arc<dyn ProvisionStore>> {
        Some(Arc::new(SqlStore::new(self.db.background())))
    }

    async fn change_feed(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreError> {
        let listener = self.db.listen(CHANGES_CHANNEL).await?;
        Ok(listener.map(|listener| Box::new(Feed { listener }) as Box<dyn ChangeFeed>))
    }

    async fn list_resumable(&self, now: OffsetDateTime) -> Result<Vec<ProvisionId>, StoreError> {
        let rows = self
            .db
            .fetch_all(
                "SELECT id FROM provision_leases JOIN provisions ON provisions.id = \
                 provision_leases.provision_id WHERE status NOT IN ('ready', 'failed') \
                 AND (lease_owner IS NULL OR lease_until IS NULL OR lease_until < $1) \
                 ORDER BY created_at",
                &args![now],
            )
            .await?;
        rows.iter()
            .map(|row| {
                ProvisionId::parse(&row.text("id")?)
                    .map_err(|_| StoreError::Corrupt("provisions.id holds an invalid value".into()))
            })
            .collect()
    }

    async fn name_claim(&self, name: &NodeName) -> Result<Option<ClaimHolder>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                "SELECT holder_kind, holder_id FROM name_claims WHERE name = $1",
                &args![name.as_str()],
            )
            .await?;
        row.map(|r| claim_holder(&r.text("holder_kind")?, &r.text("holder_id")?))
            .transpose()
    }
}

/// The statement for `D`: `postgres` on PostgreSQL, `sqlite` on SQLite (whose write
/// transaction holds the whole database, so it needs no row locks).
fn in_dialect<D: Dialect>(postgres: &'static str, sqlite: &'static str) -> &'static str {
    if D::NAME == "postgres" {
        postgres
    } else {
        sqlite
    }
}

/// The channel of the change feed: announced by [`ProvisionStore::update_provision`], and
/// by the PostgreSQL triggers of migration 0008 on enrollments and progress reports.
const CHANGES_CHANNEL: &str = "levelrail_provisions";

/// The change feed over a `LISTEN` connection.
#[derive(Debug)]
struct Feed {
    listener: levelrail_db::Listener,
}

#[async_trait]
impl ChangeFeed for Feed {
    async fn next(&mut self) -> Result<Option<Change>, StoreError> {
        Ok(match self.listener.recv().await? {
            levelrail_db::Notice::Payload(payload) => {
                let (id, kind) = payload.split_once(' ').ok_or_else(|| {
                    StoreError::Corrupt(format!("change feed payload `{payload}`"))
                })?;
                Some(Change {
                    provision_id: id.to_owned(),
                    cancel_requested: kind == "cancel",
                })
            }
            levelrail_db::Notice::Reconnected => None,
        })
    }
}

#[async_trait]
impl<D: Dialect> SharedStateStore for SqlStore<D> {
    async fn shared_value(&self, name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        self.db
            .execute(
                "INSERT INTO shared_state (name, value) VALUES ($1, $2) \
                 ON CONFLICT (name) DO NOTHING",
                &args![name, value.to_vec()],
            )
            .await?;
        let row = self
            .db
            .fetch_optional(
                "SELECT value FROM shared_state WHERE name = $1",
                &args![name],
            )
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("shared value `{name}` vanished")))?;
        Ok(row.bytes("value")?)
    }
}

/// The batch statement, built from the first request's argument types.
static STATEMENT: OnceLock<Option<BatchStatement>> = OnceLock::new();

/// PostgreSQL's group commit (see `store::batch`): the one-request statement's
/// (`INSERT_WITH_TOKEN_POSTGRES`) over many requests, whose arguments come as one array
/// each, of the array `types`: `$n` holds every request's `n`th argument, column `an` of
/// `r`.
fn statement(types: &[&'static str]) -> String {
    let arrays: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("${}::{t}", i + 1))
        .collect();
    let names: Vec<String> = (1..=types.len()).map(|i| format!("a{i}")).collect();
    let cols = |range: std::ops::RangeInclusive<usize>| {
        range
            .map(|i| format!("r.a{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "WITH r AS (SELECT * FROM unnest({arrays}) AS r({names})), \
         claim AS (INSERT INTO name_claims (name, holder_kind, holder_id) \
         SELECT r.a44, 'provision', r.a1 FROM r ORDER BY r.a44 ON CONFLICT (name) DO NOTHING \
         RETURNING holder_id), \
         provision AS (INSERT INTO provisions ({columns}, created_at, updated_at) \
         SELECT {provision}, r.a30, r.a31 \
         FROM r JOIN claim ON claim.holder_id = r.a1 RETURNING id), \
         lease AS (INSERT INTO provision_leases (provision_id, lease_owner, lease_until) \
         SELECT r.a1, r.a32, CASE WHEN r.a33 IS NULL THEN NULL \
         ELSE clock_timestamp() + (r.a33 - r.a31) END \
         FROM r JOIN provision ON provision.id = r.a1 WHERE r.a7 NOT IN ('ready', 'failed') \
         RETURNING provision_id, lease_until), \
         token AS (INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
         created_at, expires_at, used_at, used_by_node, revoked_at) \
         SELECT {token} FROM r JOIN provision ON provision.id = r.a1 RETURNING id) \
         SELECT r.a1 AS id, lease.lease_until AS lease_until, \
         CASE WHEN provision.id IS NULL THEN 0 ELSE 1 END AS inserted \
         FROM r LEFT JOIN provision ON provision.id = r.a1 \
         LEFT JOIN lease ON lease.provision_id = r.a1",
        arrays = arrays.join(", "),
        names = names.join(", "),
        columns = provision_columns!(),
        provision = cols(1..=29),
        token = cols(34..=43),
    )
}
