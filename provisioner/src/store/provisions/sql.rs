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

macro_rules! select_provisions {
    ($tail:literal) => {
        concat!(
            "SELECT ",
            provision_columns!(),
            ", lease_until, created_at, updated_at FROM provisions ",
            $tail
        )
    };
}

const INSERT: &str = concat!(
    "INSERT INTO provisions (",
    provision_columns!(),
    ", lease_until, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, $31, $32, $33)"
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

/// PostgreSQL: the name claim (`$44`), the provision (`$1`…`$33`) and its join token
/// (`$34`…`$43`) in one statement, one round trip. A name already claimed claims nothing
/// and so inserts nothing (`claimed` is 0); a repeated request id fails the whole statement.
const INSERT_WITH_TOKEN_POSTGRES: &str = concat!(
    "WITH claim AS (INSERT INTO name_claims (name, holder_kind, holder_id) \
     VALUES ($44, 'provision', $1) ON CONFLICT (name) DO NOTHING RETURNING holder_id), \
     provision AS (INSERT INTO provisions (",
    provision_columns!(),
    ", lease_until, created_at, updated_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, ",
    lease_on_database_clock!("$31", "$33"),
    ", $32, $33 FROM claim RETURNING id, lease_until), \
     token AS (INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
     created_at, expires_at, used_at, used_by_node, revoked_at) \
     SELECT $34, $35, $36, $37, $38, $39, $40, $41, $42, $43 FROM provision RETURNING id) \
     SELECT (SELECT count(*) FROM claim) AS claimed, \
     (SELECT lease_until FROM provision) AS lease_until"
);

/// PostgreSQL, after [`INSERT`]: the lease of `$1` on the database's clock (see
/// [`lease_on_database_clock`]).
const LEASE_ON_DATABASE_CLOCK: &str = concat!(
    "UPDATE provisions SET lease_until = ",
    lease_on_database_clock!("$2", "$3"),
    " WHERE id = $1 RETURNING lease_until"
);

/// SQLite: the same three inserts as one batch of statements (one hand-off to the writer's
/// thread), committed with the other requests queued meanwhile (group commit); the first
/// to fail stops it, and its savepoint undoes what it did.
const INSERT_WITH_TOKEN_SQLITE: &str = concat!(
    "SAVEPOINT grouped; \
     INSERT INTO name_claims (name, holder_kind, holder_id) VALUES ($44, 'provision', $1); \
     INSERT INTO provisions (",
    provision_columns!(),
    ", lease_until, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, \
     $29, $30, $31, $32, $33); \
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
     install_progress.error AS error FROM (SELECT ",
    provision_columns!(),
    ", lease_until, created_at, updated_at FROM provisions WHERE id = $1) AS p \
     LEFT JOIN install_progress ON install_progress.provision_id = p.id"
);

/// [`PROVISIONS_PER_READ`] provisions by id.
const GET_MANY: &str = select_provisions!(
    "WHERE id IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)"
);

const UPDATE: &str = "UPDATE provisions SET status = $1, install_step = $2, ip_address = $3, \
     node_id = $4, failed_phase = $5, failure_reason = $6, provider_error_code = $7, \
     provider_server_id = $8, join_token_id = $9, sealed_join_token = $10, \
     cancel_requested = $11, saga_step = $12, saga = $13, stages = $14, generation = $15, \
     updated_at = $16, lease_owner = CASE WHEN $17 THEN NULL ELSE lease_owner END, \
     lease_until = CASE WHEN $17 THEN NULL ELSE lease_until END \
     WHERE id = $18 AND generation = $19 AND lease_epoch = $20 \
     RETURNING lease_owner, lease_until, lease_epoch";

/// Renews `$2`'s live leases (at `$3`) on the provisions of the JSON array `$4` until `$1`.
macro_rules! renew_leases {
    ($ids:literal) => {
        concat!(
            "UPDATE provisions SET lease_until = $1 \
             WHERE lease_owner = $2 AND lease_until >= $3 \
             AND status NOT IN ('ready', 'failed') AND id IN (",
            $ids,
            ") RETURNING id, lease_epoch"
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
            Ok(_) => match tx.execute(INSERT, &enc.all_columns(&stored)).await {
                Ok(_) => {
                    let mut stored = stored;
                    if D::NOW.is_some() && stored.lease_until.is_some() {
                        let lease =
                            args![stored.id.as_str(), stored.lease_until, stored.updated_at];
                        let row = tx.fetch_optional(LEASE_ON_DATABASE_CLOCK, &lease).await?;
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
        // Only a failure also releases the name: every other change is one statement, in a
        // transaction of its own (one round trip).
        let row = if next.status == ProvisionStatus::Failed {
            let mut tx = self.db.write().await?;
            let row = tx.fetch_optional(UPDATE, &columns).await?;
            if row.is_some() {
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
        next.lease_owner = row.opt_text("lease_owner")?;
        next.lease_until = row.opt_time("lease_until")?;
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
        // A renewal of a live lease keeps the epoch; anything else is a new holder.
        let row = self
            .db
            .fetch_optional(
                "UPDATE provisions SET lease_owner = $1, lease_until = $2, \
                 lease_epoch = CASE WHEN lease_owner = $1 AND lease_until >= $4 \
                      THEN lease_epoch ELSE lease_epoch + 1 END \
                 WHERE id = $3 AND status NOT IN ('ready', 'failed') \
                 AND (lease_owner IS NULL OR lease_until IS NULL OR lease_until < $4 \
                      OR lease_owner = $1) \
                 RETURNING lease_epoch",
                &args![owner, until, id.as_str(), now],
            )
            .await?;
        row.as_ref().map(lease_epoch).transpose()
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
        let sql = if D::NAME == "postgres" {
            RENEW_LEASES_POSTGRES
        } else {
            RENEW_LEASES_SQLITE
        };
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
        self.db
            .execute(
                "UPDATE provisions SET lease_owner = NULL, lease_until = NULL, \
                 lease_epoch = lease_epoch + 1 WHERE id = $1 AND lease_owner = $2",
                &args![id.as_str(), owner],
            )
            .await?;
        Ok(())
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
                "SELECT id FROM provisions WHERE status NOT IN ('ready', 'failed') \
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
         provision AS (INSERT INTO provisions ({columns}, lease_until, created_at, updated_at) \
         SELECT {provision}, CASE WHEN r.a31 IS NULL THEN NULL \
         ELSE clock_timestamp() + (r.a31 - r.a33) END, r.a32, r.a33 \
         FROM r JOIN claim ON claim.holder_id = r.a1 RETURNING id, lease_until), \
         token AS (INSERT INTO join_tokens (id, secret_sha256, node_name, provision_id, role, \
         created_at, expires_at, used_at, used_by_node, revoked_at) \
         SELECT {token} FROM r JOIN provision ON provision.id = r.a1 RETURNING id) \
         SELECT r.a1 AS id, provision.lease_until AS lease_until, \
         CASE WHEN provision.id IS NULL THEN 0 ELSE 1 END AS inserted \
         FROM r LEFT JOIN provision ON provision.id = r.a1",
        arrays = arrays.join(", "),
        names = names.join(", "),
        columns = provision_columns!(),
        provision = cols(1..=30),
        token = cols(34..=43),
    )
}
