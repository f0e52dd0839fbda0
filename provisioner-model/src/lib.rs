//! The provisioner's model: what a node, a join token, a provision and an orphan are, the
//! rules they keep (the provision's state machine and saga log, the join-token policy,
//! what an update stores), and the ports the application layer works over. Pure: no
//! database, runtime, HTTP or gRPC crate, and no import of another layer of this crate.
mod audit;
mod join_token;
mod names;
mod node;
mod orphan;
pub mod ports;
pub mod provision;
mod records;
mod stored;

pub use audit::{AUDIT_ID_PREFIX, AuditEvent};
pub use join_token::{
    JoinTokenId, MintedJoinToken, ParsedJoinToken, TOKEN_ID_PREFIX, TOKEN_VERSION,
    secret_hash_matches,
};
pub use names::{FieldError, MAX_NODE_NAME_LEN, NodeName};
pub use node::{
    HEARTBEAT_INTERVAL, HeartbeatReport, InstallReport, InstallStep, LIVENESS_WINDOW, Liveness,
    NODE_ERROR_MAX, NODE_ID_PREFIX, Node, NodeFilter, NodeId, NodeServer, ProgressReport, Role,
    WorkloadKind, clean_node_error, fingerprint_der,
};
pub use orphan::{ORPHAN_ID_PREFIX, Orphan, OrphanId, OrphanReason, OrphanState};
pub use records::{JoinTokenRecord, NewNode, RedeemError, explain_failed_update};
pub use stored::stored_time;

pub use join_token::constant_time_eq;
pub use names::sanitized_prefix;
