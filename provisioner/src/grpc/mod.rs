//! Transport: the `NodesService` (operators), `EnrollmentService` (agents) and
//! `ProvisionerService` gRPC handlers, proto↔model conversion and the error → `Status`
//! mappings.
//! Handlers destructure the request, convert, make one application call and convert back.
mod audit;
mod broker_client;
mod convert;
mod enrollment;
mod nodes;
mod orphan_convert;
mod peer;
mod provision_convert;
mod provision_status;
mod provisioner;
mod status;
mod watch;

pub use audit::AuditGrpc;
pub use broker_client::{BrokerTls, GrpcBroker, TokenDigests};
pub use enrollment::EnrollmentGrpc;
pub use nodes::NodesGrpc;
pub use provisioner::ProvisionerGrpc;
pub use status::REASON_METADATA_KEY;
pub use watch::ProvisionerServer;

/// The client certificate chain of a TLS connection (leaf first), as the agent listener
/// inserts it into every request's extensions after the handshake. The listener has
/// already verified the chain against the control-plane CA; `Heartbeat` reads the node id
/// from the leaf's common name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCertificates(pub Vec<rustls::pki_types::CertificateDer<'static>>);

#[cfg(test)]
mod tests;
