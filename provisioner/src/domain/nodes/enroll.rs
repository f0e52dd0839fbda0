//! Enrollment and cloud-init progress: the two operations authenticated by a join token.
//! A rejected token is logged with its id and the reason only, never its secret.
use anyhow::Context as _;
use time::OffsetDateTime;
use tracing::{info, warn};

use super::{Nodes, validate};
use crate::domain::error::{AuthFailure, NodesError, redeem_failure};
use crate::domain::join_token::{JoinTokenId, ParsedJoinToken, secret_hash_matches};
use crate::domain::names::NodeName;
use crate::domain::node::{InstallStep, Node, NodeId};
use crate::enroll::ca::fingerprint_der;
use crate::store::{JoinTokenRecord, NewNode, RedeemError};

impl Nodes {
    /// Redeems a join token and enrolls a node: checks that the token pins our CA, that
    /// it is redeemable, signs the agent's CSR for a fresh node id, then atomically marks
    /// the token used and creates the node. Returns the node and its client certificate
    /// (PEM). A bad CSR or field is refused before the token is touched.
    pub async fn enroll(
        &self,
        token: &str,
        node_name: NodeName,
        addresses: Vec<String>,
        agent_version: String,
        csr_pem: &str,
    ) -> Result<(Node, String), NodesError> {
        let parsed = self.parse_pinned(token)?;
        validate::report(&addresses, &agent_version)?;
        validate::csr(csr_pem)?;
        let now = self.now();
        let record = self.redeemable_token(&parsed, &node_name, now).await?;
        let node_id = NodeId::generate();
        let certificate_pem = self
            .ca
            .sign_node_csr(csr_pem, node_id.as_str())
            .context("signing a node certificate")?;
        let (cert_serial, cert_fingerprint) = certificate_details(&certificate_pem)?;
        let new_node = NewNode {
            id: node_id,
            addresses,
            agent_version,
            workload_kinds: record.role.workload_kinds(),
            provision_id: record.provision_id.clone(),
            cert_serial,
            cert_fingerprint,
        };
        let node = self
            .store
            .redeem_join_token(
                &parsed.id,
                parsed.secret_sha256(),
                &node_name,
                now,
                &new_node,
            )
            .await
            .map_err(|e| redeem_rejected(&parsed.id, e, &node_name))?;
        info!(node_id = %node.id, node_name = %node.name, token_id = %parsed.id, "node enrolled");
        if let Some(listener) = &self.listener {
            listener.node_enrolled(&node);
        }
        Ok((node, certificate_pem))
    }

    /// Records a cloud-init install step of the provision `token` is bound to. The token
    /// must pin our CA and be neither revoked nor expired; having been used already is
    /// fine (the agent may enroll before cloud-init reports its last step).
    pub async fn report_progress(&self, token: &str, step: InstallStep) -> Result<(), NodesError> {
        let parsed = self.parse_pinned(token)?;
        let now = self.now();
        let record = self.store.get_join_token(&parsed.id).await?;
        let record = match record {
            Some(r) if secret_hash_matches(&r.secret_sha256, parsed.secret_sha256()) => r,
            _ => return Err(reject(&parsed.id, AuthFailure::Unknown)),
        };
        if record.revoked_at.is_some() {
            return Err(reject(&parsed.id, AuthFailure::Revoked));
        }
        if record.expires_at <= now {
            return Err(reject(&parsed.id, AuthFailure::Expired));
        }
        let Some(provision_id) = record.provision_id else {
            warn!(token_id = %parsed.id, "progress report with a token bound to no provision");
            return Err(NodesError::PermissionDenied(
                "join token is not bound to a provision".into(),
            ));
        };
        self.store
            .record_install_progress(&provision_id, step, now)
            .await?;
        info!(%provision_id, step = step.as_str(), "install progress reported");
        if let Some(listener) = &self.listener {
            listener.install_progress(&provision_id, step);
        }
        Ok(())
    }

    /// Parses a token string and checks that it pins this control plane's CA.
    fn parse_pinned(&self, token: &str) -> Result<ParsedJoinToken, NodesError> {
        let parsed = ParsedJoinToken::parse(token).inspect_err(|_| {
            warn!(reason = "malformed", "join token rejected");
        })?;
        if !parsed.pins(&self.ca.fingerprint()) {
            return Err(reject(&parsed.id, AuthFailure::Fingerprint));
        }
        Ok(parsed)
    }

    /// The token's record if it can be redeemed now for `node_name` (checked before the
    /// CSR is signed; the store re-checks atomically).
    async fn redeemable_token(
        &self,
        parsed: &ParsedJoinToken,
        node_name: &NodeName,
        now: OffsetDateTime,
    ) -> Result<JoinTokenRecord, NodesError> {
        let record = self.store.get_join_token(&parsed.id).await?;
        let rejection = match &record {
            None => Some(RedeemError::Unknown),
            Some(r) => r.rejection(parsed.secret_sha256(), Some(node_name), now),
        };
        match (record, rejection) {
            (Some(record), None) => Ok(record),
            (_, Some(e)) => Err(redeem_rejected(&parsed.id, e, node_name)),
            (None, None) => Err(reject(&parsed.id, AuthFailure::Unknown)),
        }
    }
}

/// Logs and returns an authentication failure for a token (its id only).
fn reject(id: &JoinTokenId, reason: AuthFailure) -> NodesError {
    warn!(token_id = %id, reason = reason.as_str(), "join token rejected");
    NodesError::unauthenticated(reason)
}

/// Converts a failed redemption to the caller's error and logs it (token id and reason).
fn redeem_rejected(id: &JoinTokenId, e: RedeemError, node_name: &NodeName) -> NodesError {
    let err = redeem_failure(e, node_name.as_str());
    match &err {
        NodesError::Unauthenticated { reason } => {
            warn!(token_id = %id, reason = reason.as_str(), "join token rejected");
        }
        NodesError::AlreadyExists { .. } => {
            warn!(token_id = %id, reason = "name_taken", %node_name, "join token rejected");
        }
        other => warn!(token_id = %id, error = %other, "join token redemption failed"),
    }
    err
}

/// Serial number (hex) and fingerprint (hex SHA-256 of the DER) of a PEM certificate.
fn certificate_details(cert_pem: &str) -> Result<(String, String), NodesError> {
    let der = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .next()
        .context("the signed certificate is not PEM")?
        .context("the signed certificate is not PEM")?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| anyhow::anyhow!("parsing the signed certificate: {e}"))?;
    Ok((hex::encode(cert.raw_serial()), fingerprint_der(&der)))
}
