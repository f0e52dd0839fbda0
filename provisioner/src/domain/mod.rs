//! The provisioner's domain: validated names, join tokens, node records and the `Nodes`
//! state struct; provisions (`provision`) and the `Provisioner` state struct. The gRPC
//! handlers call these structs' methods. Nothing here imports the proto crate.
mod error;
mod join_token;
mod names;
mod node;
mod nodes;
mod orphan;
mod orphans;
pub mod provision;
mod provisions;
mod teardown;

pub use error::{AuthFailure, NodesError};
pub use join_token::{
    JoinTokenId, MintedJoinToken, ParsedJoinToken, TOKEN_ID_PREFIX, TOKEN_VERSION,
    secret_hash_matches,
};
pub use names::{FieldError, MAX_NODE_NAME_LEN, NodeName};
pub use node::{
    HEARTBEAT_INTERVAL, HeartbeatReport, InstallReport, InstallStep, LIVENESS_WINDOW, Liveness,
    NODE_ID_PREFIX, Node, NodeId, Role, WorkloadKind,
};
pub use nodes::{
    Clock, DEFAULT_JOIN_TOKEN_TTL, EnrollmentListener, JoinTokenInfo, MAX_JOIN_TOKEN_TTL,
    NodeIdentity, Nodes, PROVISION_JOIN_TOKEN_TTL, ProgressAuthority,
};
pub use orphan::{ORPHAN_ID_PREFIX, Orphan, OrphanId, OrphanReason, OrphanState};
pub use orphans::{ADOPTION_TOKEN_TTL, Adoption, Orphans};
pub use provisions::{
    AgentAddrPolicy, DEFAULT_PROVISION_TIMEOUT, ListPage, Provisioner, ProvisionerConfig,
    ProvisionerDeps, RetryTuning, WorkflowTuning,
};
pub use teardown::ServerTeardown;
