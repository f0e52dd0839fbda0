//! The node registry's domain: validated names, join tokens, node records and the `Nodes`
//! state struct whose methods the gRPC handlers call. Nothing here imports the proto crate.
mod error;
mod join_token;
mod names;
mod node;
mod nodes;
mod teardown;

pub use error::{AuthFailure, NodesError};
pub use join_token::{
    JoinTokenId, MintedJoinToken, ParsedJoinToken, TOKEN_ID_PREFIX, TOKEN_VERSION,
    secret_hash_matches,
};
pub use names::{FieldError, MAX_NODE_NAME_LEN, NodeName};
pub use node::{
    HEARTBEAT_INTERVAL, InstallStep, LIVENESS_WINDOW, Liveness, NODE_ID_PREFIX, Node, NodeId, Role,
    WorkloadKind,
};
pub use nodes::{
    Clock, DEFAULT_JOIN_TOKEN_TTL, JoinTokenInfo, MAX_JOIN_TOKEN_TTL, NodeIdentity, Nodes,
    PROVISION_JOIN_TOKEN_TTL,
};
pub use teardown::ServerTeardown;
