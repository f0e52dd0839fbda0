//! Authentication of an agent by its client certificate: the leaf of [`PeerCertificates`]
//! names the node (its common name is the node id) and its DER fingerprint must be the
//! one issued at enrollment (checked by the application layer).
use tonic::Extensions;

use super::PeerCertificates;
use crate::app::{AuthFailure, NodeIdentity, NodesError};
use crate::enroll::ca::fingerprint_der;
use crate::model::NodeId;

/// The node identity a request's client certificate proves, or `Unauthenticated` when
/// there is no certificate or its leaf does not name a node.
pub(super) fn node_identity(extensions: &Extensions) -> Result<NodeIdentity, NodesError> {
    let unauthenticated = || NodesError::unauthenticated(AuthFailure::ClientCertificate);
    let leaf = extensions
        .get::<PeerCertificates>()
        .and_then(|certs| certs.0.first())
        .ok_or_else(unauthenticated)?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|_| unauthenticated())?;
    let common_name = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .ok_or_else(unauthenticated)?;
    let node_id = NodeId::parse(common_name).map_err(|_| unauthenticated())?;
    Ok(NodeIdentity {
        node_id,
        cert_fingerprint: fingerprint_der(leaf),
    })
}
