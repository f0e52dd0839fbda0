//! Enrollment: the one operation a join token authenticates.
//! A rejected token is logged with its id and the reason only, never its secret.
use anyhow::Context as _;
use time::OffsetDateTime;
use tracing::{info, warn};

use super::{Nodes, validate};
use crate::app::error::{AuthFailure, NodesError, redeem_failure};
use crate::enroll::ca::fingerprint_der;
use crate::model::NodeName;
use crate::model::{JoinTokenId, ParsedJoinToken, secret_hash_matches};
use crate::model::{JoinTokenRecord, NewNode, RedeemError};
use crate::model::{Node, NodeId};

impl Nodes {
    /// Redeems a join token and enrolls a node: checks that the token pins our CA, that
    /// it is redeemable, signs the agent's CSR for a fresh node id, then atomically marks
    /// the token used and creates the node. Returns the node and its client certificate
    /// (PEM). A bad CSR or field is refused before the token is touched.
    ///
    /// Idempotent for a lost answer: the same token (unexpired, unrevoked) with a CSR for
    /// the same key and name returns the node it enrolled and the same certificate, instead
    /// of "token used". Another key gets "used": the identity stays with the key that
    /// redeemed the token.
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
        let record = match self.redeemable_token(&parsed, &node_name, now).await {
            Ok(record) => record,
            Err(refused) => {
                return match self.replayed(&parsed, &node_name, csr_pem, now).await? {
                    Some(enrolled) => Ok(enrolled),
                    None => Err(refused),
                };
            }
        };
        let node_id = NodeId::generate();
        let certificate_pem = self
            .ca
            .sign_node_csr(csr_pem, node_id.as_str())
            .context("signing a node certificate")?;
        let (cert_serial, cert_fingerprint, cert_expires_at) =
            certificate_details(&certificate_pem)?;
        let new_node = NewNode {
            id: node_id,
            addresses,
            agent_version,
            workload_kinds: record.role.workload_kinds(),
            provision_id: record.provision_id.clone(),
            cert_serial,
            cert_fingerprint,
            cert_expires_at,
            certificate_pem: certificate_pem.clone(),
        };
        let redeemed = self
            .store
            .redeem_join_token(
                &parsed.id,
                parsed.secret_sha256(),
                &node_name,
                now,
                &new_node,
            )
            .await;
        let node = match redeemed {
            Ok(node) => node,
            // A concurrent retry of the same enrollment won the redemption.
            Err(RedeemError::Used) => {
                if let Some(enrolled) = self.replayed(&parsed, &node_name, csr_pem, now).await? {
                    return Ok(enrolled);
                }
                return Err(redeem_rejected(&parsed.id, RedeemError::Used, &node_name));
            }
            Err(e) => return Err(redeem_rejected(&parsed.id, e, &node_name)),
        };
        info!(node_id = %node.id, node_name = %node.name, token_id = %parsed.id, "node enrolled");
        if let Some(listener) = &self.listener {
            listener.node_enrolled(&node);
        }
        Ok((node, certificate_pem))
    }

    /// The enrollment a used token already made, when this request repeats it: the right
    /// secret, still within the token's life, the same node name, and a CSR for the key the
    /// issued certificate certifies.
    async fn replayed(
        &self,
        parsed: &ParsedJoinToken,
        node_name: &NodeName,
        csr_pem: &str,
        now: OffsetDateTime,
    ) -> Result<Option<(Node, String)>, NodesError> {
        let Some(record) = self.store.get_join_token(&parsed.id).await? else {
            return Ok(None);
        };
        let live = secret_hash_matches(&record.secret_sha256, parsed.secret_sha256())
            && record.revoked_at.is_none()
            && record.expires_at > now;
        let Some(node_id) = record.used_by_node.filter(|_| live) else {
            return Ok(None);
        };
        let Some(node) = self.store.get_node(&node_id).await? else {
            return Ok(None);
        };
        let Some(certificate_pem) = self.store.get_node_certificate(&node_id).await? else {
            return Ok(None);
        };
        if &node.name != node_name || !same_public_key(csr_pem, &certificate_pem) {
            return Ok(None);
        }
        info!(node_id = %node.id, token_id = %parsed.id, "enrollment repeated (the first answer was lost); same identity returned");
        Ok(Some((node, certificate_pem)))
    }

    /// Parses a token string and checks that it pins this control plane's CA.
    fn parse_pinned(&self, token: &str) -> Result<ParsedJoinToken, NodesError> {
        let parsed = ParsedJoinToken::parse(token).inspect_err(|_| {
            warn!(reason = "malformed", "join token rejected");
        })?;
        if !parsed.pins(self.ca.fingerprint()) {
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

/// Whether the CSR asks for the key the certificate certifies (their SubjectPublicKeyInfo
/// DER is equal).
fn same_public_key(csr_pem: &str, certificate_pem: &str) -> bool {
    let csr_key = x509_parser::pem::parse_x509_pem(csr_pem.as_bytes())
        .ok()
        .and_then(|(_, pem)| {
            use x509_parser::prelude::FromDer as _;
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
                .ok()
                .map(|(_, csr)| csr.certification_request_info.subject_pki.raw.to_vec())
        });
    let cert_key = rustls_pemfile::certs(&mut certificate_pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .and_then(|der| {
            x509_parser::parse_x509_certificate(&der)
                .ok()
                .map(|(_, cert)| cert.tbs_certificate.subject_pki.raw.to_vec())
        });
    matches!((csr_key, cert_key), (Some(a), Some(b)) if a == b)
}

/// Serial number (hex), fingerprint (hex SHA-256 of the DER) and expiry (at stored
/// precision) of a PEM certificate.
fn certificate_details(cert_pem: &str) -> Result<(String, String, OffsetDateTime), NodesError> {
    let der = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .next()
        .context("the signed certificate is not PEM")?
        .context("the signed certificate is not PEM")?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| anyhow::anyhow!("parsing the signed certificate: {e}"))?;
    let expires_at = crate::model::stored_time(cert.validity().not_after.to_datetime())?;
    Ok((
        hex::encode(cert.raw_serial()),
        fingerprint_der(&der),
        expires_at,
    ))
}
