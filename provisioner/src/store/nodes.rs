//! `NodeStore` in SQL. Redemption is one write transaction whose conditional `UPDATE`
//! re-checks the token's state: SQLite queues it on the write lock (`BEGIN IMMEDIATE`),
//! PostgreSQL on the token's row lock, so exactly one of any number of concurrent
//! redemptions matches.
use crate::model::stored_time;
use async_trait::async_trait;
use levelrail_db::{Dialect, Tx, args};
use time::OffsetDateTime;

use super::SqlStore;
use super::claims::claim_for_node;
use super::codec::{
    addresses_json, kinds_json, node_insert_outcome, read_node, read_progress, read_token,
};
use crate::model::explain_failed_update;
use crate::model::ports::{NodeStore, StoreError};
use crate::model::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, Node, NodeFilter, NodeId, NodeName,
};
use crate::model::{JoinTokenRecord, NewNode, RedeemError};

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

/// A `nodes` query reading every column `read_node` decodes, the node's provision joined
/// (as `p`) for the server it created.
macro_rules! select_nodes {
    ($tail:literal) => {
        concat!(
            "SELECT nodes.id, nodes.name, nodes.addresses, nodes.agent_version, \
             nodes.docker_version, nodes.workload_kinds, nodes.provision_id, nodes.enrolled_at, \
             nodes.last_seen_at, nodes.cert_serial, nodes.cert_fingerprint, \
             nodes.cert_expires_at, p.provider AS server_provider, p.region AS server_region, \
             p.size AS server_size, p.provider_server_id AS server_id, p.saga AS server_saga \
             FROM nodes LEFT JOIN provisions AS p ON p.id = nodes.provision_id ",
            $tail
        )
    };
}

/// Inserts the node of a redemption inside its transaction (`enrolled_at = last_seen_at =
/// now`). On error the caller drops the transaction, which rolls the token update back.
async fn insert_node<D: Dialect>(
    tx: &mut Tx<D>,
    node_name: &NodeName,
    n: &NewNode,
    now: OffsetDateTime,
) -> Result<(), RedeemError> {
    let result = tx
        .execute(
            "INSERT INTO nodes (id, name, addresses, agent_version, workload_kinds, \
             provision_id, enrolled_at, last_seen_at, cert_serial, cert_fingerprint, \
             cert_expires_at, certificate_pem) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11)",
            &args![
                n.id.as_str(),
                node_name.as_str(),
                addresses_json(&n.addresses),
                &n.agent_version,
                kinds_json(&n.workload_kinds),
                n.provision_id.as_deref(),
                now,
                &n.cert_serial,
                &n.cert_fingerprint,
                n.cert_expires_at,
                &n.certificate_pem,
            ],
        )
        .await;
    node_insert_outcome::<D>(result)
}

/// Stores a join token (see [`join_token_args`]).
pub(super) const INSERT_JOIN_TOKEN: &str = "INSERT INTO join_tokens (id, secret_sha256, node_name, \
     provision_id, role, created_at, expires_at, used_at, used_by_node, revoked_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// The arguments of [`INSERT_JOIN_TOKEN`].
pub(super) fn join_token_args(t: &JoinTokenRecord) -> [levelrail_db::Value; 10] {
    args![
        t.id.as_str(),
        &t.secret_sha256,
        t.node_name.as_ref().map(NodeName::as_str),
        t.provision_id.clone(),
        t.role.as_str(),
        t.created_at,
        t.expires_at,
        t.used_at,
        t.used_by_node.as_ref().map(NodeId::as_str),
        t.revoked_at,
    ]
}

#[async_trait]
impl<D: Dialect> NodeStore for SqlStore<D> {
    async fn create_join_token(&self, t: &JoinTokenRecord) -> Result<(), StoreError> {
        let done = self
            .db
            .execute(INSERT_JOIN_TOKEN, &join_token_args(t))
            .await;
        match done {
            Err(e) if D::unique_violation(&e).is_some() => {
                Err(StoreError::Duplicate("join_tokens"))
            }
            other => other.map(drop).map_err(StoreError::from),
        }
    }

    async fn get_join_token(
        &self,
        id: &JoinTokenId,
    ) -> Result<Option<JoinTokenRecord>, StoreError> {
        let row = self
            .db
            .fetch_optional(select_tokens!("WHERE id = $1"), &args![id.as_str()])
            .await?;
        row.as_ref().map(read_token).transpose()
    }

    async fn list_join_tokens(&self) -> Result<Vec<JoinTokenRecord>, StoreError> {
        let rows = self
            .db
            .fetch_all(select_tokens!("ORDER BY id"), &[])
            .await?;
        rows.iter().map(read_token).collect()
    }

    async fn revoke_join_token(
        &self,
        id: &JoinTokenId,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let done = self
            .db
            .execute(
                "UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, $1) \
                 WHERE id = $2 AND used_at IS NULL",
                &args![now, id.as_str()],
            )
            .await?;
        Ok(done > 0)
    }

    async fn revoke_join_tokens_for_provision(
        &self,
        provision_id: &str,
        now: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        Ok(self
            .db
            .execute(
                "UPDATE join_tokens SET revoked_at = $1 \
                 WHERE provision_id = $2 AND used_at IS NULL AND revoked_at IS NULL",
                &args![now, provision_id],
            )
            .await?)
    }

    async fn redeem_join_token(
        &self,
        id: &JoinTokenId,
        secret_sha256: &[u8; 32],
        node_name: &NodeName,
        now: OffsetDateTime,
        new_node: &NewNode,
    ) -> Result<Node, RedeemError> {
        let now = stored_time(now)?;
        // Check the secret (in constant time, in Rust) and the token's state without taking
        // the write lock; the conditional update below re-checks the state atomically.
        let row = self.get_join_token(id).await?.ok_or(RedeemError::Unknown)?;
        if let Some(reason) = row.rejection(secret_sha256, Some(node_name), now) {
            return Err(reason);
        }
        let mut tx = self.db.write().await?;
        let updated = tx
            .execute(
                "UPDATE join_tokens SET used_at = $1, used_by_node = $2 \
                 WHERE id = $3 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $1 \
                 AND (node_name IS NULL OR node_name = $4)",
                &args![now, new_node.id.as_str(), id.as_str(), node_name.as_str()],
            )
            .await?;
        if updated == 0 {
            tx.rollback().await?;
            let row = self.get_join_token(id).await?;
            return Err(explain_failed_update(
                row.as_ref(),
                secret_sha256,
                node_name,
                now,
            ));
        }
        insert_node(&mut tx, node_name, new_node, now).await?;
        claim_for_node(
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
        let row = self
            .db
            .fetch_optional(select_nodes!("WHERE nodes.id = $1"), &args![id.as_str()])
            .await?;
        row.as_ref().map(read_node).transpose()
    }

    async fn get_node_certificate(&self, id: &NodeId) -> Result<Option<String>, StoreError> {
        let row = self
            .db
            .fetch_optional(
                "SELECT certificate_pem FROM nodes WHERE id = $1",
                &args![id.as_str()],
            )
            .await?;
        Ok(row
            .map(|r| r.opt_text("certificate_pem"))
            .transpose()?
            .flatten())
    }

    async fn list_nodes(&self) -> Result<Vec<Node>, StoreError> {
        let rows = self
            .db
            .fetch_all(select_nodes!("ORDER BY nodes.name"), &[])
            .await?;
        rows.iter().map(read_node).collect()
    }

    async fn list_nodes_page(
        &self,
        limit: u32,
        after: Option<&NodeName>,
        filter: &NodeFilter,
    ) -> Result<Vec<Node>, StoreError> {
        // One statement for every filter: an absent criterion is a NULL that passes all.
        // The name index gives the order; a page reads on until it is full.
        let kind = filter
            .workload_kind
            .map(|k| format!("%\"{}\"%", k.as_str()));
        let rows = self
            .db
            .fetch_all(
                select_nodes!(
                    "WHERE nodes.name > COALESCE($2, '') \
                     AND ($3 IS NULL OR nodes.last_seen_at >= $3) \
                     AND ($4 IS NULL OR nodes.last_seen_at < $4) \
                     AND ($5 IS NULL OR p.provider = $5) \
                     AND ($6 IS NULL OR nodes.workload_kinds LIKE $6) \
                     ORDER BY nodes.name LIMIT $1"
                ),
                &args![
                    limit,
                    after.map(NodeName::as_str),
                    filter.seen_since,
                    filter.seen_before,
                    filter.provider.map(|p| p.as_str()),
                    kind,
                ],
            )
            .await?;
        rows.iter().map(read_node).collect()
    }

    async fn delete_node(&self, id: &NodeId) -> Result<bool, StoreError> {
        // The node's name claim goes with it, in the same transaction.
        let mut tx = self.db.write().await?;
        let done = tx
            .execute("DELETE FROM nodes WHERE id = $1", &args![id.as_str()])
            .await?;
        tx.execute(
            "DELETE FROM name_claims WHERE holder_kind = 'node' AND holder_id = $1",
            &args![id.as_str()],
        )
        .await?;
        tx.commit().await?;
        Ok(done > 0)
    }

    async fn touch_node(
        &self,
        id: &NodeId,
        now: OffsetDateTime,
        report: &HeartbeatReport,
    ) -> Result<bool, StoreError> {
        let done = self
            .db
            .execute(
                "UPDATE nodes SET last_seen_at = $1, addresses = $2, agent_version = $3, \
                 docker_version = $4 WHERE id = $5",
                &args![
                    now,
                    addresses_json(&report.addresses),
                    &report.agent_version,
                    // The column predates NULL-able versions: "" stores none.
                    report.docker_version.as_deref().unwrap_or(""),
                    id.as_str(),
                ],
            )
            .await?;
        Ok(done > 0)
    }

    async fn record_install_progress(
        &self,
        provision_id: &str,
        step: InstallStep,
        now: OffsetDateTime,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.db
            .execute(
                "INSERT INTO install_progress (provision_id, step, reported_at, error) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (provision_id, step) DO NOTHING",
                &args![provision_id, step.as_str(), now, error],
            )
            .await?;
        Ok(())
    }

    async fn list_install_progress(
        &self,
        provision_id: &str,
    ) -> Result<Vec<InstallReport>, StoreError> {
        let rows = self
            .db
            .fetch_all(
                "SELECT step, reported_at, error FROM install_progress WHERE provision_id = $1",
                &args![provision_id],
            )
            .await?;
        read_progress(&rows)
    }
}
